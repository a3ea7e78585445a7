package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
)

// The routes of mode http, under http.public_url: the Request URLs of the app's Event
// Subscriptions, Slash Commands and Interactivity (see manifest-http.yaml).
const (
	EventsPath        = "/webhooks/slack/events"
	CommandsPath      = "/webhooks/slack/commands"
	InteractivityPath = "/webhooks/slack/interactivity"
)

// RegisterHTTP adds the three routes of mode http to srv. Call it before srv runs; until
// Run has loaded the inbox they answer 503, which Slack retries.
func (c *Channel) RegisterHTTP(srv *httpserver.Server) {
	if c.cfg.Mode != ModeHTTP {
		return
	}
	srv.Handle("POST "+EventsPath, c.route(decodeEvents))
	srv.Handle("POST "+CommandsPath, c.route(decodeCommand))
	srv.Handle("POST "+InteractivityPath, c.route(decodeInteraction))
}

// runHTTP is Run in mode http: the routes feed the same inbox and queue as Socket Mode.
func (c *Channel) runHTTP(ctx context.Context, h channels.Handler) error {
	d, stop := c.start(ctx, h)
	d.accepting.Store(true)
	c.health.Up()
	c.log.Info("taking slack events over http")
	<-ctx.Done()
	d.accepting.Store(false)
	stop()
	return nil
}

// decoded is a verified request turned into what Socket Mode would have delivered; reply,
// when set, is the whole answer (the url_verification challenge), with nothing stored.
type decoded struct {
	evt   socketmode.Event
	reply any
}

// decoder reads a verified request body; its error is a one-line reason for a 400.
type decoder func(body []byte, h http.Header) (decoded, error)

// route verifies a request's v0 signature, decodes it and hands it to accept, as Socket
// Mode does; the 200 goes out once the event is committed.
func (c *Channel) route(dec decoder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := httpserver.ReadBody(w, r)
		if !ok {
			return
		}
		if err := c.verify(r.Header, body); err != nil {
			httpserver.WriteError(w, http.StatusUnauthorized, "the request is not signed by slack: "+err.Error())
			return
		}
		got, err := dec(body, r.Header)
		if err != nil {
			httpserver.WriteError(w, http.StatusBadRequest, oneLine(err.Error()))
			return
		}
		if got.reply != nil {
			writeCompact(w, got.reply)
			return
		}
		d := c.disp.Load()
		if d == nil || !d.accepting.Load() {
			httpserver.WriteError(w, http.StatusServiceUnavailable, "slack is not receiving yet; try again")
			return
		}
		err = d.accept(d.ctx, []socketmode.Event{got.evt}, func(_ int, payload any) {
			writeCompact(w, payload)
		})
		if err != nil {
			httpserver.WriteError(w, http.StatusServiceUnavailable, "storing the event failed; deliver it again")
		}
	})
}

// verify checks X-Slack-Signature over the raw body and the 5-minute window of its
// timestamp with the library's verifier, which compares in constant time.
func (c *Channel) verify(h http.Header, body []byte) error {
	sv, err := slackgo.NewSecretsVerifier(h, c.cfg.SigningSecret)
	if err != nil {
		if errors.Is(err, slackgo.ErrExpiredTimestamp) || errors.Is(err, slackgo.ErrMissingHeaders) || errors.Is(err, slackgo.ErrInvalidSignature) {
			return err
		}
		return errors.New("malformed signature headers")
	}
	if _, err := sv.Write(body); err != nil {
		return fmt.Errorf("hashing the body: %w", err)
	}
	return sv.Ensure()
}

// envelope is what Socket Mode delivers for a request of kind t, with Slack's retry
// headers as it reports them.
func envelope(t socketmode.EventType, data any, payload json.RawMessage, h http.Header) decoded {
	req := &socketmode.Request{Type: string(t), Payload: payload, RetryReason: h.Get("X-Slack-Retry-Reason")}
	req.RetryAttempt, _ = strconv.Atoi(h.Get("X-Slack-Retry-Num"))
	return decoded{evt: socketmode.Event{Type: t, Data: data, Request: req}}
}

// decodeEvents reads an Events API request: a url_verification challenge, or an
// event_callback stored as Socket Mode's events_api payload (the same JSON).
func decodeEvents(body []byte, h http.Header) (decoded, error) {
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		return decoded{}, fmt.Errorf("not a slack event: %w", err)
	}
	if ev.Type == slackevents.URLVerification {
		v, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if !ok || v.Challenge == "" {
			return decoded{}, errors.New("not a slack event: url_verification without a challenge")
		}
		return decoded{reply: map[string]string{"challenge": v.Challenge}}, nil
	}
	return envelope(socketmode.EventTypeEventsAPI, ev, body, h), nil
}

// decodeCommand reads a slash command (a form), stored as Socket Mode's JSON payload.
func decodeCommand(body []byte, h http.Header) (decoded, error) {
	r := &http.Request{Method: http.MethodPost, URL: &url.URL{}, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body: io.NopCloser(bytes.NewReader(body))}
	cmd, err := slackgo.SlashCommandParse(r)
	if err != nil {
		return decoded{}, fmt.Errorf("not a slash command: %w", err)
	}
	if cmd.Command == "" || cmd.TriggerID == "" {
		return decoded{}, errors.New("not a slash command: no command or trigger_id")
	}
	payload, err := json.Marshal(cmd)
	if err != nil {
		return decoded{}, fmt.Errorf("encoding a slash command: %w", err)
	}
	return envelope(socketmode.EventTypeSlashCommand, cmd, payload, h), nil
}

// decodeInteraction reads a click or a modal submission (payload= form-encoded JSON).
func decodeInteraction(body []byte, h http.Header) (decoded, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return decoded{}, fmt.Errorf("not an interaction: %w", err)
	}
	payload := form.Get("payload")
	if payload == "" {
		return decoded{}, errors.New("not an interaction: no payload")
	}
	var cb slackgo.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &cb); err != nil {
		return decoded{}, fmt.Errorf("not an interaction: %w", err)
	}
	if cb.Type == "" {
		return decoded{}, errors.New("not an interaction: no type")
	}
	return envelope(socketmode.EventTypeInteractive, cb, json.RawMessage(payload), h), nil
}

// writeCompact answers 200 with v as JSON, or with no body for nil (what Slack expects of
// an acknowledgement with nothing to say).
func writeCompact(w http.ResponseWriter, v any) {
	if v == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		httpserver.WriteError(w, http.StatusInternalServerError, "encoding the answer failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
