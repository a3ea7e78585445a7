package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
)

// WebhookPath is the route Telegram posts updates to in webhook mode, under http.public_url.
const WebhookPath = "/webhooks/telegram"

// secretHeader carries setWebhook's secret_token in every webhook request.
const secretHeader = "X-Telegram-Bot-Api-Secret-Token"

// allowedUpdates are the update kinds the bot asks for, polling or not.
var allowedUpdates = []string{models.AllowedUpdateMessage, models.AllowedUpdateCallbackQuery}

// RegisterHTTP adds POST /webhooks/telegram to srv in webhook mode. Call it before srv
// runs; until Run has loaded the inbox the route answers 503, which Telegram retries. The
// library's own handler is not used: it answers 200 to a wrong secret, compares it in
// variable time and queues the update in memory before any commit.
func (c *Channel) RegisterHTTP(srv *httpserver.Server) {
	if c.cfg.Mode != ModeWebhook {
		return
	}
	srv.Handle("POST "+WebhookPath, http.HandlerFunc(c.serveHTTP))
}

func (c *Channel) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if c.cfg.WebhookSecret == "" || !httpserver.SecretEqual(r.Header.Get(secretHeader), c.cfg.WebhookSecret) {
		httpserver.WriteError(w, http.StatusUnauthorized, "missing or wrong "+secretHeader)
		return
	}
	body, ok := httpserver.ReadBody(w, r)
	if !ok {
		return
	}
	d := c.disp.Load()
	if d == nil || !d.accepting.Load() {
		httpserver.WriteError(w, http.StatusServiceUnavailable, "telegram is not receiving yet; try again")
		return
	}
	code, why, handle := d.acceptWebhook(body)
	if code != http.StatusOK {
		httpserver.WriteError(w, code, why)
		return
	}
	// The update is committed. Its hand-over is queued before the 200, so updates are
	// handed over in the order they were answered, and runs off the request, so the
	// connection is free for Telegram's next update whatever the hand-over waits for.
	if handle != nil {
		d.handOver(handle)
	}
	w.WriteHeader(http.StatusOK)
}

// handOvers runs the hand-overs of committed webhook updates one at a time, in the order
// they were queued, on a goroutine of its own while any are queued.
type handOvers struct {
	mu      sync.Mutex
	queue   []func()
	running bool
}

// handOver queues f; Drain waits for it as for the update's turn.
func (d *dispatcher) handOver(f func()) {
	d.inflight.Add(1)
	h := &d.handOvers
	h.mu.Lock()
	h.queue = append(h.queue, f)
	start := !h.running
	h.running = true
	h.mu.Unlock()
	if start {
		go d.runHandOvers()
	}
}

func (d *dispatcher) runHandOvers() {
	h := &d.handOvers
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.queue, h.running = nil, false
			h.mu.Unlock()
			return
		}
		f := h.queue[0]
		h.queue[0] = nil
		h.queue = h.queue[1:]
		h.mu.Unlock()
		d.runHandOver(f)
	}
}

// runHandOver runs f; a panic is logged and the next hand-over still runs.
func (d *dispatcher) runHandOver(f func()) {
	defer d.inflight.Done()
	defer func() {
		if p := recover(); p != nil {
			d.c.log.Error("handing over a webhook update panicked", "panic", fmt.Sprint(p))
		}
	}()
	f()
}

// InboxAccount implements channels.InboxAdopter: the bot whose inbox records this
// adapter keeps.
func (c *Channel) InboxAccount() string { return c.account }

// AdoptInbox implements channels.InboxAdopter: the updates another replica saved and never
// handled join this Run's inbox, saved before it returns, and are dispatched as replays.
func (c *Channel) AdoptInbox(ctx context.Context, saved string) (int, error) {
	d := c.disp.Load()
	if d == nil || !d.receiving.Load() {
		return 0, channels.ErrNotReceiving
	}
	raws, ids, err := d.in.adopt(saved)
	if err != nil {
		c.log.Error("dropping an adopted update inbox that cannot be read", "err", err)
		return 0, nil
	}
	if len(raws) == 0 {
		return 0, nil
	}
	if err := d.in.flush(context.WithoutCancel(ctx)); err != nil {
		d.in.unreceive(ids, -1)
		return 0, err
	}
	for _, raw := range raws {
		d.dispatch(d.ctx, raw)
	}
	return len(raws), nil
}

// decodeUpdate reads a webhook body as one update; the error is a one-line reason.
func decodeUpdate(body []byte) (int64, *models.Update, error) {
	var u models.Update
	err := json.Unmarshal(body, &u)
	if err == nil && u.ID > 0 {
		return u.ID, &u, nil
	}
	// Only naming what is wrong: an update_id that reads, exactly, means err is set.
	if _, exact, idErr := updateID(body); idErr != nil {
		return 0, nil, fmt.Errorf("not a telegram update: %w", idErr)
	} else if !exact {
		return 0, nil, errors.New("not a telegram update: update_id is not an integer")
	}
	return 0, nil, fmt.Errorf("not a telegram update: %w", err)
}

// acceptWebhook commits one update to the inbox; handle then dispatches it as a polled one.
// The status is 200 once it is committed (or was before: handle is nil), 400 for a body
// that is no update and 503 when the commit fails, so Telegram delivers it again.
// Concurrent requests share their commits.
func (d *dispatcher) acceptWebhook(body []byte) (code int, why string, handle func()) {
	id, u, err := decodeUpdate(body)
	if err != nil {
		return http.StatusBadRequest, strings.Join(strings.Fields(err.Error()), " "), nil
	}
	raw := json.RawMessage(body)
	if !d.in.receiveAny(id, raw) {
		d.c.log.Debug("update received before; answered and skipped", "update", id)
		d.c.dropped.Note(channels.InboundDuplicate)
		return http.StatusOK, "", nil
	}
	if err := d.in.flush(context.WithoutCancel(d.ctx)); err != nil {
		d.in.unreceive([]int64{id}, -1)
		d.storeFailed(err)
		return http.StatusServiceUnavailable, "storing the update failed; deliver it again", nil
	}
	d.stored()
	return http.StatusOK, "", func() { d.dispatchUpdate(d.ctx, u) }
}

// serveWebhook registers the webhook with Telegram and takes updates from the HTTP route
// until ctx ends.
func (c *Channel) serveWebhook(ctx context.Context, d *dispatcher) error {
	hook, err := c.webhookURL()
	if err != nil {
		return err
	}
	err = c.do(ctx, 0, false, "setWebhook", func(ctx context.Context) error {
		_, err := c.b.SetWebhook(ctx, &bot.SetWebhookParams{URL: hook, SecretToken: c.cfg.WebhookSecret, AllowedUpdates: allowedUpdates})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		c.health.Down("setWebhook failed")
		return fmt.Errorf("registering the telegram webhook: %w", explainAuth(c.scrub(err)))
	}
	c.log.Info("telegram webhook registered", "url", hook)
	c.health.Up()
	d.accepting.Store(true)
	<-ctx.Done()
	d.accepting.Store(false)
	return nil
}

// webhookURL is http.public_url + WebhookPath.
func (c *Channel) webhookURL() (string, error) {
	base := strings.TrimRight(c.cfg.PublicURL, "/")
	if base == "" {
		return "", errors.New("running telegram: channels.telegram.mode is webhook but http.public_url is not set")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("running telegram: http.public_url %q is not an https:// URL", base)
	}
	if u.Scheme != "https" {
		c.log.Warn("http.public_url is not https://; Telegram only delivers webhooks over HTTPS (ports 443, 80, 88 or 8443)")
	}
	return base + WebhookPath, nil
}

// deleteWebhook removes a webhook left from webhook mode, which would make every
// getUpdates fail with 409. A failure is logged: polling then says what is wrong.
func (c *Channel) deleteWebhook(ctx context.Context) {
	err := c.do(ctx, 0, false, "deleteWebhook", func(ctx context.Context) error {
		_, err := c.b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		c.logLimited(slog.LevelWarn, "deleting the telegram webhook", err)
	}
}
