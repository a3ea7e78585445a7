package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/backoff"
)

// timestampWindow is how far a request's signed X-Signature-Timestamp may be from the
// adapter's clock, either way, so a captured request cannot be sent again later.
const timestampWindow = 5 * time.Minute

// InteractionsPath is the route of interactions http, under http.public_url: the
// application's Interactions Endpoint URL.
const InteractionsPath = "/webhooks/discord"

// RegisterHTTP adds POST /webhooks/discord to srv with interactions http. Call it before
// srv runs; until Run or RunInteractions is running the route answers 503.
func (c *Channel) RegisterHTTP(srv *httpserver.Server) {
	if c.cfg.Interactions != InteractionsHTTP {
		return
	}
	srv.Handle("POST "+InteractionsPath, http.HandlerFunc(c.serveHTTP))
}

// Ready is nil while the gateway is connected and, with interactions http, the endpoint
// takes requests (InteractionsReady); otherwise an error naming the problem.
func (c *Channel) Ready() error {
	return errors.Join(c.health.Err(), c.InteractionsReady())
}

// InteractionsReady is nil with interactions gateway or while the interactions endpoint
// takes requests: the readiness of a replica that does not hold the gateway.
func (c *Channel) InteractionsReady() error {
	if c.cfg.Interactions != InteractionsHTTP {
		return nil
	}
	if d := c.disp.Load(); d == nil || !d.accepting.Load() {
		return errors.New("discord: the interactions endpoint is not taking requests")
	}
	return nil
}

// checkTimestamp refuses a signed timestamp (Unix seconds) outside timestampWindow of
// the adapter's clock.
func (c *Channel) checkTimestamp(ts string) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("X-Signature-Timestamp is not a Unix time")
	}
	if d := c.now().Sub(time.Unix(sec, 0)); d > timestampWindow || d < -timestampWindow {
		return fmt.Errorf("the request was signed more than %v from now", timestampWindow)
	}
	return nil
}

// HTTPInteractions tells whether interactions arrive on the HTTP endpoint, so every
// replica should take them, not only the one holding the gateway.
func (c *Channel) HTTPInteractions() bool { return c.cfg.Interactions == InteractionsHTTP }

// serveHTTP verifies an interaction request with the application's public key, answers a
// PING, and hands the rest to takeInteraction, as the gateway does; the HTTP response is
// the callback.
func (c *Channel) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := httpserver.ReadBody(w, r)
	if !ok {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !discordgo.VerifyInteraction(r, c.pubKey) {
		httpserver.WriteError(w, http.StatusUnauthorized, "invalid request signature")
		return
	}
	if err := c.checkTimestamp(r.Header.Get("X-Signature-Timestamp")); err != nil {
		httpserver.WriteError(w, http.StatusUnauthorized, err.Error())
		return
	}
	i, err := decodeInteraction(body)
	if err != nil {
		httpserver.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if i.Type == discordgo.InteractionPing {
		writeCallback(w, &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		return
	}
	d := c.disp.Load()
	if d == nil || !d.accepting.Load() {
		httpserver.WriteError(w, http.StatusServiceUnavailable, "discord is not taking interactions yet; try again")
		return
	}
	resp, p := c.takeInteraction(d.ctx, d, i, body)
	if resp == nil {
		httpserver.WriteError(w, http.StatusBadRequest, "an interaction plangate does not answer, or answered already")
		return
	}
	werr := writeCallback(w, resp)
	if p != nil {
		// Replies wait for this: a follow-up before Discord has the deferred answer
		// would find no interaction to follow.
		if werr != nil {
			p.ackErr = werr
			c.log.Error("an interaction could not be answered", "chat", i.ChannelID, "interaction", i.ID, "err", werr)
		}
		close(p.acked)
	}
}

// decodeInteraction reads a request body as one interaction; the error is a one-line reason.
func decodeInteraction(body []byte) (*discordgo.Interaction, error) {
	var i discordgo.Interaction
	if err := json.Unmarshal(body, &i); err != nil {
		return nil, fmt.Errorf("not a discord interaction: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	if i.ID == "" || i.Type == 0 {
		return nil, errors.New("not a discord interaction: no id or type")
	}
	if i.Type != discordgo.InteractionPing && i.Token == "" {
		return nil, errors.New("not a discord interaction: no token")
	}
	return &i, nil
}

// writeCallback answers 200 with the callback as JSON, and flushes it, so that Discord
// has it before any follow-up is sent.
func writeCallback(w http.ResponseWriter, resp *discordgo.InteractionResponse) error {
	data, err := json.Marshal(resp)
	if err != nil {
		httpserver.WriteError(w, http.StatusInternalServerError, "encoding the answer failed")
		return fmt.Errorf("encoding the callback: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing the callback: %w", err)
	}
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("sending the callback: %w", err)
	}
	return nil
}

// doIx is do for the webhook calls that follow an interaction's answer. With interactions
// http that answer is the HTTP response, which Discord may not have taken in when the first
// follow-up arrives ("Unknown Message" or "Unknown interaction"): that is tried again.
func (c *Channel) doIx(ctx context.Context, what string, call func(opts ...discordgo.RequestOption) error) error {
	err := c.do(ctx, what, call)
	if c.cfg.Interactions != InteractionsHTTP {
		return err
	}
	// Tried while the waits grow: the last one waits the limit.
	wait := backoff.New(c.tune.retry.Backoff, c.tune.retry.MaxBackoff)
	for last := false; err != nil && unknownInteraction(err) && !last; {
		pause := wait.NextBackOff()
		last = pause >= c.tune.retry.MaxBackoff
		if channels.Sleep(ctx, pause) != nil {
			return err
		}
		err = c.do(ctx, what, call)
	}
	return err
}

// unknownInteraction tells Discord's "not (yet) known" answers about an interaction.
func unknownInteraction(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && (ae.Code == 10008 || ae.Code == 10062 || ae.Code == 10015)
}
