package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// poll long-polls getUpdates until ctx ends. The library's own poller confirms updates to
// Telegram before its handlers run, so a crash would lose them; this one saves each batch
// in the inbox before the next call confirms it.
func (c *Channel) poll(ctx context.Context, d *dispatcher) error {
	pause := c.tune.holdAfterErr
	for {
		if ctx.Err() != nil {
			return nil
		}
		raws, err := c.getUpdates(ctx, d.in.offset())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				c.log.Error("telegram stopped accepting this bot", "err", err)
				return fmt.Errorf("receiving telegram updates: %w", err)
			}
			var ra *retryAfterError
			wait := pause
			if errors.As(err, &ra) {
				wait = ra.wait
			} else {
				pause = min(pause*2, c.tune.maxBackoff)
			}
			c.log.Warn("receiving telegram updates", "err", err, "retry_in", wait)
			if sleep(ctx, wait) != nil {
				return nil
			}
			continue
		}
		pause = c.tune.holdAfterErr
		for _, raw := range raws {
			d.receive(ctx, raw)
		}
		if len(raws) > 0 {
			// Saved before the next getUpdates tells Telegram these were received. A
			// failed save is logged and the bot goes on: stopping would lose more.
			if err := d.in.flush(context.WithoutCancel(ctx)); err != nil {
				c.log.Error("saving the update inbox", "err", err)
			}
		}
	}
}

// fatalError is Telegram refusing the bot itself (revoked token): polling cannot recover.
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

// retryAfterError is a 429 on getUpdates.
type retryAfterError struct {
	wait time.Duration
	msg  string
}

func (e *retryAfterError) Error() string { return e.msg }

// getUpdates asks for the updates from offset on, waiting up to PollTimeout for news.
func (c *Channel) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{
		"offset":          offset,
		"timeout":         int(c.cfg.PollTimeout / time.Second),
		"allowed_updates": []string{models.AllowedUpdateMessage, models.AllowedUpdateCallbackQuery},
	})
	if err != nil {
		return nil, err
	}
	// The request may take the whole long-poll wait; give it that plus slack.
	rctx, cancel := context.WithTimeout(ctx, c.cfg.PollTimeout+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.api+"/bot"+c.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, c.scrub(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.scrub(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("reading getUpdates answer: %w", err))
	}
	var ans struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("decoding getUpdates answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if !ans.OK {
		msg := c.scrubText(fmt.Sprintf("getUpdates: %d %s", ans.ErrorCode, ans.Description))
		switch ans.ErrorCode {
		case http.StatusUnauthorized, http.StatusNotFound:
			return nil, &fatalError{msg: msg + " (check channels.telegram.token)"}
		case http.StatusTooManyRequests:
			return nil, &retryAfterError{wait: time.Duration(max(ans.Parameters.RetryAfter, 1)) * c.tune.retryUnit, msg: msg}
		case http.StatusConflict:
			// Another process polls with this token, or a webhook is set.
			return nil, errors.New(msg + " (is another plangate running with this bot, or a webhook set?)")
		}
		return nil, errors.New(msg)
	}
	return ans.Result, nil
}

// dispatcher hands received updates to the handler and retires them from the inbox as
// they are handled.
type dispatcher struct {
	c     *Channel
	h     channels.Handler
	async channels.AsyncHandler // h, when it can queue
	in    *inbox
}

// receive takes one polled update.
func (d *dispatcher) receive(ctx context.Context, raw json.RawMessage) {
	var head struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		d.c.log.Error("skipping an unreadable update", "err", err)
		return
	}
	if !d.in.receive(head.ID, raw) {
		d.c.log.Debug("update received before; skipped", "update", head.ID)
		return
	}
	d.dispatch(ctx, raw)
}

// dispatch handles one update that is in the inbox.
func (d *dispatcher) dispatch(ctx context.Context, raw json.RawMessage) {
	var u models.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		d.c.log.Error("skipping an undecodable update", "err", err)
		var head struct {
			ID int64 `json:"update_id"`
		}
		if json.Unmarshal(raw, &head) == nil {
			d.in.done(head.ID)
		}
		return
	}
	job, ok := d.c.inbound(ctx, &u)
	// Updates finished here are saved with their batch, before the next poll.
	if !ok {
		d.in.done(u.ID)
		return
	}
	if job.local != nil {
		go func() {
			job.local(context.WithoutCancel(ctx))
			d.finish(ctx, u.ID)
		}()
		return
	}
	if d.async == nil {
		err := d.h.Handle(ctx, job.msg)
		d.c.handled(job, err)
		d.in.done(u.ID)
		return
	}
	// The engine's work outlives Run: a shutdown stops receiving, not the turns in flight.
	done := d.async.Enqueue(context.WithoutCancel(ctx), job.msg)
	go func() {
		err := <-done
		d.c.handled(job, err)
		d.finish(ctx, u.ID)
	}()
}

// finish retires an update handled off the polling loop and saves the inbox shortly.
// Once Run has ended (a shutdown waiting for the engine) it saves at once, before the
// store closes.
func (d *dispatcher) finish(ctx context.Context, id int64) {
	d.in.done(id)
	if ctx.Err() == nil {
		d.in.flushSoon(context.WithoutCancel(ctx), d.c.tune.flushDelay)
		return
	}
	if err := d.in.flush(context.WithoutCancel(ctx)); err != nil {
		d.c.log.Error("saving the update inbox", "update", id, "err", err)
	}
}

// job is what an update asks for: a message for the handler, or work the adapter does
// itself (local).
type job struct {
	msg   core.Message
	toast *toast // for a button click: the answer to show the clicker
	local func(ctx context.Context)
}

// handled logs a handler failure and settles a click's answer.
func (c *Channel) handled(j job, err error) {
	if err != nil {
		c.log.Error("handling telegram update", "update", j.msg.ID, "chat", j.msg.Address.Chat, "err", err)
	}
	if j.toast != nil {
		j.toast.finish()
	}
}
