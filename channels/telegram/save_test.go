package telegram

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/channels/channeltest"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// onFullDisk is an env whose adapter saves through disk, which starts full; the engine
// writes to the store directly, so its commits work.
func onFullDisk(disk *diskState) func(*env) {
	disk.full.Store(true)
	return func(e *env) {
		e.wrap = func(st channels.State) channels.State {
			if disk.State == nil {
				disk.State = st
				return disk
			}
			return st // a restart: a killed process's disk is of no more use
		}
	}
}

// confirms reports whether a getUpdates call has confirmed update id to Telegram.
func (e *env) confirms(id int64) bool {
	past := strconv.FormatInt(id+1, 10)
	return slices.ContainsFunc(e.api.callsOf("getUpdates"), func(c apiCall) bool { return c.Params["offset"] == past })
}

// An update is handed to the engine while its save runs, so the engine may answer it
// before it is stored. When the save fails and the process is killed, nothing was
// confirmed: Telegram serves the update again at the next start, and the engine, which
// committed its answer with the update's key, does not answer it twice.
func TestAnsweredBeforeItsFailedSaveIsNotAnsweredTwice(t *testing.T) {
	disk := &diskState{}
	e := newEnv(t, onFullDisk(disk))
	sid := e.sessionID(private)
	e.Model.Push(sid, core.ModelResponse{Text: "answer one"})
	first := e.api.say(private, alice, "first message")
	e.api.waitText(private, "answer one")
	e.Idle()
	e.Eventually("failed saves", func() bool { return disk.failed.Load() >= 3 })
	if e.confirms(first) {
		t.Fatal("the update was confirmed although it was never stored")
	}
	if n := len(e.api.callsOf("getUpdates")); n != 1 {
		t.Errorf("%d getUpdates while the save fails, want the one that got the update", n)
	}

	e.Crash() // killed: its final save fails too, and the dead adapter saves nothing more
	e.Model.Push(sid, core.ModelResponse{Text: "answer two"})
	e.Start()
	second := e.api.say(private, alice, "second message")
	e.api.waitText(private, "answer two")
	e.Idle()
	e.waitInbox(func(s savedInbox) bool { return len(s.Pending) == 0 && s.Handled >= second })
	e.Eventually("both updates confirmed", func() bool { return e.confirms(second) })

	msgs := e.api.messages(private)
	if n := countContaining(msgs, "answer one"); n != 1 {
		t.Errorf("%q shown %d times, want once", "answer one", n)
	}
	if n := e.Model.CallCount(); n != 2 {
		t.Errorf("the model was called %d times, want 2 (the redelivered update is a duplicate)", n)
	}
	if served := e.api.callsOf("getUpdates"); len(served) < 2 || served[1].Params["offset"] != "0" {
		t.Errorf("the restart did not ask Telegram again from the unconfirmed update: %v", served)
	}
}

// The engine starts on an update before it is stored, and its confirmation to Telegram
// waits for the save, not for the engine: while the save fails nothing is confirmed and
// Telegram is not asked again (a redelivery would race the turn); once the save works the
// update is confirmed while its turn still runs, and it is answered once.
func TestSaveAndTurnOverlap(t *testing.T) {
	disk := &diskState{}
	e := newEnv(t, onFullDisk(disk))
	sid := e.sessionID(private)
	block := make(chan struct{})
	e.Model.Block(block)
	e.Model.Push(sid, core.ModelResponse{Text: "the only answer"})
	calls := make(chan struct{}, 4)
	e.Model.Hook(func(core.ModelRequest) { calls <- struct{}{} })
	id := e.api.say(private, alice, "a message")
	<-calls // the turn is in its model call, held there
	e.Eventually("failed saves", func() bool { return disk.failed.Load() >= 3 })
	if e.confirms(id) || len(e.api.callsOf("getUpdates")) != 1 {
		t.Fatalf("while the save fails: getUpdates %v, want only the one that got the update", e.api.callsOf("getUpdates"))
	}

	disk.full.Store(false)
	e.Eventually("the update confirmed while its turn runs", func() bool { return e.confirms(id) })
	s := e.waitInbox(func(s savedInbox) bool { return s.Next > id })
	if len(s.Pending) != 1 {
		t.Errorf("the saved inbox holds %d updates while the turn runs, want the one", len(s.Pending))
	}
	close(block)
	e.api.waitText(private, "the only answer")
	e.Idle()
	if n := countContaining(e.api.messages(private), "the only answer"); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
	if len(calls) != 0 {
		t.Errorf("the model was called %d more times, want once in all", len(calls))
	}
}

// countedState counts the durable and the lazy saves that reach a memory store.
type countedState struct {
	channeltest.MemState
	durable, lazy atomic.Int64
}

func (s *countedState) SetChannelState(ctx context.Context, ch, acct, key, v string) error {
	s.durable.Add(1)
	return s.MemState.SetChannelState(ctx, ch, acct, key, v)
}

func (s *countedState) SetChannelStateLazy(ctx context.Context, ch, acct, key, v string) error {
	s.lazy.Add(1)
	return s.MemState.SetChannelState(ctx, ch, acct, key, v)
}

func (s *countedState) SetChannelStateWith(ctx context.Context, ch, acct, key string, lazy bool, value func() (string, error)) error {
	if lazy {
		s.lazy.Add(1)
	} else {
		s.durable.Add(1)
	}
	return s.MemState.SetChannelStateWith(ctx, ch, acct, key, lazy, value)
}

// A finished update leaves the saved inbox with the durable save of the next batch, so
// its lazy save, due flushDelay later, finds nothing to write; an update the adapter
// settled itself asks for a sooner save (flushLocal), which brings the scheduled one
// forward and drops every finished update at once. (synctest's clock: no waiting.)
func TestFinishedUpdatesRideTheNextSave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := testChannel(t)
		st := &countedState{}
		c.st = st
		ctx := context.Background()
		in, err := c.loadInbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d := &dispatcher{c: c, in: in}
		saved := func() savedInbox {
			v, _, _ := st.ChannelState(ctx, Name, c.account, inboxKey)
			var s savedInbox
			if err := json.Unmarshal([]byte(v), &s); err != nil {
				t.Fatalf("the saved inbox %q: %v", v, err)
			}
			return s
		}
		batch := func(id int64) { // what the poller does with a batch of one
			in.receive(id, json.RawMessage(`{"update_id":`+strconv.FormatInt(id, 10)+`}`))
			if err := in.flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		const hour = time.Hour
		batch(101)
		d.finish(ctx, 101, hour) // the engine answered it
		time.Sleep(hour / 2)
		synctest.Wait()
		if s := saved(); len(s.Pending) != 1 || st.lazy.Load() != 0 {
			t.Fatalf("before the delay: %d pending, %d lazy saves; want the finished update kept, no save", len(s.Pending), st.lazy.Load())
		}
		batch(102) // the next message's save carries the first one's removal
		if s := saved(); len(s.Pending) != 1 || s.Handled != 101 {
			t.Fatalf("after the next batch's save: pending %d, handled %d; want only 102 pending", len(s.Pending), s.Handled)
		}
		time.Sleep(hour)
		synctest.Wait()
		if n := st.lazy.Load(); n != 0 {
			t.Errorf("the lazy save wrote %d times although the durable one had carried its change", n)
		}

		d.finish(ctx, 102, hour)                 // answered: a save an hour away
		batch(103)                               // a button the adapter answers itself
		d.finish(ctx, 103, 100*time.Millisecond) // brings that save forward
		time.Sleep(time.Second)
		synctest.Wait()
		if s := saved(); len(s.Pending) != 0 || s.Handled != 103 || st.lazy.Load() != 1 {
			t.Errorf("a second after the local update: pending %d, handled %d, %d lazy saves; want all dropped by one save", len(s.Pending), s.Handled, st.lazy.Load())
		}
		time.Sleep(2 * hour)
		synctest.Wait()
		if n := st.lazy.Load(); n != 1 {
			t.Errorf("%d lazy saves in all, want the one brought forward", n)
		}
	})
}
