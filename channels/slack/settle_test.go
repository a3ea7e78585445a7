package slack

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
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

// After Run has ended (a shutdown's grace period) the engine settles a message on its
// worker, calling then right after the turn. The inbox is saved durably at once, but
// beside that worker, which goes on to the session's next job while the save waits for
// the disk; when Drain returns the saved inbox no longer holds the envelope.
func TestSettleAfterStopLeavesTheWorker(t *testing.T) {
	f := newFakeSlack(t)
	st := &heldSaves{release: make(chan struct{})}
	eng := thenEngine{then: make(chan func(error), 1)}
	c, stop := runChannel(t, f, Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL()}, st, &channeltest.LogBuffer{}, eng)
	f.waitAck(f.dm("D0ALICE", alice, "hello", "").Envelope)
	var then func(error)
	select {
	case then = <-eng.then:
	case <-time.After(10 * time.Second):
		t.Fatal("the message was not handed to the engine")
	}
	stop() // Run ends; the turn goes on
	st.hold.Store(true)

	settled := make(chan struct{})
	go func() { then(nil); close(settled) }() // the engine's worker, after the turn
	select {
	case <-settled:
	case <-time.After(10 * time.Second): // the save is never released: a worker waiting for it waits for good
		close(st.release)
		<-settled
		t.Fatal("the engine's worker waited for the inbox save")
	}
	drained := make(chan error, 1)
	go func() {
		left, err := c.Drain(context.Background())
		if err == nil && left != 0 {
			t.Errorf("Drain left %d", left)
		}
		drained <- err
	}()
	f.waitFor("the settle's save waiting for the disk", func() bool { return st.waiting.Load() > 0 })
	close(st.release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	in, err := channels.LoadInbox(context.Background(), st, Name, c.team)
	if err != nil || len(in.Pending()) != 0 {
		t.Fatalf("the saved inbox after Drain: %d envelopes pending (%v); want none", len(in.Pending()), err)
	}
}
