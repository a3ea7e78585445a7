package telegram

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// thenEngine is the engine as the adapter sees it: it keeps each message's then, for the
// test to call as the engine's worker would after the turn.
type thenEngine struct{ then chan func(error) }

func (e thenEngine) EnqueueThen(_ context.Context, _ core.Message, then func(error)) {
	e.then <- then
}

// heldSaves is a store whose durable saves wait, once held, until released.
type heldSaves struct {
	channeltest.MemState
	hold    atomic.Bool
	waiting atomic.Int64
	release chan struct{}
}

func (s *heldSaves) SetChannelState(ctx context.Context, ch, acct, key, v string) error {
	if s.hold.Load() {
		s.waiting.Add(1)
		<-s.release
	}
	return s.MemState.SetChannelState(ctx, ch, acct, key, v)
}

func (s *heldSaves) SetChannelStateWith(ctx context.Context, ch, acct, key string, lazy bool, value func() (string, error)) error {
	if !lazy && s.hold.Load() {
		s.waiting.Add(1)
		<-s.release
	}
	return s.MemState.SetChannelStateWith(ctx, ch, acct, key, lazy, value)
}

// After Run has ended (a shutdown's grace period) the engine settles an update on its
// worker, calling then right after the turn. The inbox is saved durably at once, but
// beside that worker, which goes on to the session's next job while the save waits for
// the disk; Drain waits for the save, and the saved inbox no longer holds the update.
func TestSettleAfterStopLeavesTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := testChannel(t)
		st := &heldSaves{release: make(chan struct{})}
		c.st = st
		run, stop := context.WithCancel(context.Background())
		defer stop()
		in, err := c.loadInbox(run)
		if err != nil {
			t.Fatal(err)
		}
		eng := thenEngine{then: make(chan func(error), 1)}
		d := &dispatcher{c: c, h: eng, in: in, ctx: run}
		c.disp.Store(d)
		const id = 101
		in.receive(id, rawUpdate(id))
		if err := in.flush(run); err != nil { // the batch's save, before the poll after it
			t.Fatal(err)
		}
		d.dispatchUpdate(run, &models.Update{ID: id, Message: &models.Message{ID: 7, Text: "hello",
			Chat: models.Chat{ID: 9, Type: models.ChatTypePrivate}, From: &models.User{ID: 9, FirstName: "ann"}}})
		then := <-eng.then
		stop() // Run ends; the turn goes on
		st.hold.Store(true)

		settled := make(chan struct{})
		go func() { then(nil); close(settled) }() // the engine's worker, after the turn
		synctest.Wait()
		select {
		case <-settled:
		default:
			close(st.release)
			<-settled
			t.Fatal("the engine's worker waited for the inbox save")
		}
		if n := st.waiting.Load(); n != 1 {
			t.Fatalf("%d inbox saves waiting for the disk, want the settle's one", n)
		}

		drained := make(chan error, 1)
		go func() {
			left, err := c.Drain(context.Background())
			if err == nil && left != 0 {
				t.Errorf("Drain left %d", left)
			}
			drained <- err
		}()
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("Drain returned while the settle's save was waiting for the disk")
		default:
		}
		close(st.release)
		if err := <-drained; err != nil {
			t.Fatal(err)
		}
		v, _, _ := st.ChannelState(context.Background(), Name, c.account, inboxKey)
		var saved savedInbox
		if err := json.Unmarshal([]byte(v), &saved); err != nil || len(saved.Pending) != 0 || saved.Handled != id {
			t.Fatalf("the saved inbox %s (%v); want update %d handled, none pending", v, err, id)
		}
	})
}

// BenchmarkSettle is the time an engine worker spends settling one update (the then of
// EnqueueThen) on a real SQLite store: running, while Run receives; stopped, after Run
// ended, during a shutdown's grace period, when the inbox is saved durably at once (on
// the worker before, beside it since).
func BenchmarkSettle(b *testing.B) {
	for _, stopped := range []bool{false, true} {
		name := "running"
		if stopped {
			name = "stopped"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(b.TempDir(), "plangate.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			c := &Channel{account: "424242", st: st, log: channeltest.NewLogger(&channeltest.LogBuffer{}), tune: testTuning()}
			in, err := c.loadInbox(ctx)
			if err != nil {
				b.Fatal(err)
			}
			d := &dispatcher{c: c, in: in}
			run, stop := context.WithCancel(ctx)
			if stopped {
				stop()
			}
			defer stop()
			id := int64(900_000_000)
			for b.Loop() {
				b.StopTimer()
				id++
				in.receive(id, json.RawMessage(`{"update_id":`+strconv.FormatInt(id, 10)+`}`))
				if err := in.flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				d.finish(run, id, c.tune.flushDelay)
			}
			d.inflight.Wait() // the saves begun after a stop, before the store closes
		})
	}
}
