package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/backoff"
)

// poll long-polls getUpdates until ctx ends. The library's poller confirms updates before
// its handlers run, so a crash would lose them; this one saves each batch first.
func (c *Channel) poll(ctx context.Context, d *dispatcher) error {
	pause := backoff.New(c.tune.holdAfterErr, c.tune.retry.MaxBackoff)
	stuck := backoff.New(c.tune.holdAfterErr, c.tune.retry.MaxBackoff) // the wait while an unreadable update holds the offset
	for {
		if ctx.Err() != nil {
			return nil
		}
		offset := d.in.offset()
		raws, err := c.getUpdates(ctx, offset)
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
			var wait time.Duration
			if errors.As(err, &ra) {
				wait = ra.wait
			} else {
				wait = pause.NextBackOff()
			}
			c.health.Down("receiving updates fails: " + err.Error())
			c.logLimited(slog.LevelWarn, "receiving telegram updates", err, "retry_in", wait)
			if c.pause(ctx, wait) != nil {
				return nil
			}
			continue
		}
		pause.Reset()
		c.health.Up()
		fresh, blocked := d.take(raws)
		// Handed over before the save, so the engine's work overlaps the disk's: Telegram
		// is told of an update (by the next getUpdates) only once it is stored. A process
		// killed before has confirmed nothing, and the engine de-duplicates the redelivery.
		for _, raw := range fresh {
			d.dispatch(ctx, raw)
		}
		if len(raws) > 0 && !c.storeBatch(ctx, d) {
			return nil
		}
		// An update whose id cannot be read cannot be confirmed: Telegram serves it again
		// until a later update moves the offset past it. Wait, longer each time.
		if blocked && d.in.offset() == offset {
			if c.pause(ctx, stuck.NextBackOff()) != nil {
				return nil
			}
			continue
		}
		stuck.Reset()
	}
}

// storeBatch saves the inbox durably before the next getUpdates confirms the batch just
// received, retrying until it works; false when ctx ended first. A failed save (a full
// disk) confirms nothing: no getUpdates is made meanwhile, and Ready shows the failure.
// The batch, handed over already, is not asked for again in this process, so a
// redelivery cannot race the first turn.
func (c *Channel) storeBatch(ctx context.Context, d *dispatcher) bool {
	wait := backoff.New(c.tune.holdAfterErr, c.tune.retry.MaxBackoff)
	for {
		err := d.in.flush(context.WithoutCancel(ctx))
		if err == nil {
			d.stored()
			return true
		}
		d.storeFailed(err)
		if c.pause(ctx, wait.NextBackOff()) != nil {
			return false
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
		"allowed_updates": allowedUpdates,
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
	c  *Channel
	h  channels.Handler
	in *inbox

	ctx       context.Context // Run's: dispatching webhook updates
	accepting atomic.Bool     // Run is taking webhook updates
	receiving atomic.Bool     // Run is past its replay and dispatching (AdoptInbox may add updates)

	inflight  sync.WaitGroup // updates handed over (or queued to be) and not yet settled
	handOvers handOvers      // webhook updates committed, to be handed over in order
	left      atomic.Int64   // updates the handler gave up on while stopping
}

// take notes a polled batch in the inbox, not yet saved, and returns the updates to
// dispatch. blocked is true when an update's id cannot be read, so it cannot be skipped.
func (d *dispatcher) take(raws []json.RawMessage) (fresh []json.RawMessage, blocked bool) {
	for _, raw := range raws {
		id, exact, err := updateID(raw)
		if err != nil {
			d.c.logLimited(slog.LevelError, "skipping a telegram update whose update_id cannot be read", err, "bytes", len(raw))
			blocked = true
			continue
		}
		if !exact {
			// The id is known but the update will not decode: confirm it and move on.
			if d.in.receive(id, raw) {
				d.in.done(id)
			}
			d.c.logLimited(slog.LevelError, "skipping a telegram update that cannot be read", errors.New("update_id is not an integer"), "update", id)
			continue
		}
		if !d.in.receive(id, raw) {
			d.c.log.Debug("update received before; skipped", "update", id)
			d.c.dropped.Note(channels.InboundDuplicate)
			continue
		}
		fresh = append(fresh, raw)
	}
	return fresh, blocked
}

// storeFailed notes a failed inbox save: Ready reports it, the log at most once a minute.
func (d *dispatcher) storeFailed(err error) {
	d.c.health.Stored(err)
	d.c.logLimited(slog.LevelError, "saving the update inbox failed; confirming nothing to telegram until it works", err)
}

// stored notes a successful save, after failed ones: the bot goes on.
func (d *dispatcher) stored() {
	if d.c.health.Stored(nil) {
		d.c.log.Info("saving the update inbox works again")
	}
}

// updateID reads an update's id. exact is false for an id that is only readable leniently
// (a number in a string, 1001.0), which the update's own decoding will reject.
func updateID(raw json.RawMessage) (id int64, exact bool, err error) {
	var strict struct {
		ID int64 `json:"update_id"`
	}
	if json.Unmarshal(raw, &strict) == nil && strict.ID > 0 {
		return strict.ID, true, nil
	}
	var loose struct {
		ID json.Number `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &loose); err != nil {
		return 0, false, fmt.Errorf("reading update_id: %w", err)
	}
	if loose.ID == "" {
		return 0, false, errors.New("the update has no update_id")
	}
	if n, err := loose.ID.Int64(); err == nil && n > 0 {
		return n, false, nil
	}
	if f, err := loose.ID.Float64(); err == nil && f > 0 && f < 1<<53 && f == math.Trunc(f) {
		return int64(f), false, nil
	}
	return 0, false, fmt.Errorf("update_id %s is not a positive integer", loose.ID)
}

// dispatch handles one update that is in the inbox.
func (d *dispatcher) dispatch(ctx context.Context, raw json.RawMessage) {
	var u models.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		d.c.logLimited(slog.LevelError, "skipping an undecodable update", err)
		var head struct {
			ID int64 `json:"update_id"`
		}
		if json.Unmarshal(raw, &head) == nil {
			d.in.done(head.ID)
		}
		return
	}
	d.dispatchUpdate(ctx, &u)
}

// dispatchUpdate is dispatch for an update already decoded.
func (d *dispatcher) dispatchUpdate(ctx context.Context, u *models.Update) {
	job, ok := d.c.inbound(ctx, u)
	// Updates finished here are saved with their batch, before the next poll.
	if !ok {
		d.in.done(u.ID)
		return
	}
	if job.local != nil {
		d.inflight.Go(func() {
			job.local(context.WithoutCancel(ctx))
			d.finish(ctx, u.ID, d.c.tune.flushLocal)
		})
		return
	}
	job.msg.Replays = true // the inbox keeps the update until it is settled
	// The engine's work outlives Run: a shutdown stops receiving, not the turns in flight.
	// The update is settled by the engine's goroutine, right after the turn.
	d.inflight.Add(1)
	d.h.EnqueueThen(context.WithoutCancel(ctx), job.msg, func(err error) {
		defer d.inflight.Done()
		if d.settle(ctx, job, u.ID, err) {
			d.finish(ctx, u.ID, d.c.tune.flushDelay)
		}
	})
}

// finish retires an update handled off the polling loop and saves the inbox after delay,
// unless a save carries it sooner (the one before the next getUpdates). An update the
// engine finished may wait long (flushDelay: its replay after a kill is de-duplicated by
// its inbound key); one the adapter settled itself has no such key and waits briefly
// (flushLocal). Once Run has ended it saves at once, before the store closes, beside the
// caller: often an engine worker in EnqueueThen's then, which must not block on an fsync.
// Drain waits for the save. The caller is in d.inflight.
func (d *dispatcher) finish(ctx context.Context, id int64, delay time.Duration) {
	d.in.done(id)
	if ctx.Err() == nil {
		d.in.flushSoon(context.WithoutCancel(ctx), delay)
		return
	}
	d.inflight.Go(func() {
		if err := d.in.flush(context.WithoutCancel(ctx)); err != nil {
			d.c.log.Error("saving the update inbox", "update", id, "err", err)
		}
	})
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
