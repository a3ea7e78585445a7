package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// pollerFake stands for a polling channel: it tells when its Run starts and ends.
type pollerFake struct {
	started, ended chan struct{}
}

func (p *pollerFake) Name() string { return "telegram" }
func (p *pollerFake) Run(ctx context.Context, _ channels.Handler) error {
	p.started <- struct{}{}
	<-ctx.Done()
	p.ended <- struct{}{}
	return nil
}
func (p *pollerFake) Send(context.Context, core.Reply) (string, error) { return "", nil }

// failingLeases is a replica's view of the database once it is cut off.
type failingLeases struct {
	store.Leases
	cut atomic.Bool
}

func (f *failingLeases) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if f.cut.Load() {
		return core.Lease{}, false, errors.New("connection refused")
	}
	return f.Leases.AcquireLease(ctx, name, owner, now, ttl)
}

func (f *failingLeases) ReleaseLease(ctx context.Context, name, owner string) error {
	if f.cut.Load() {
		return errors.New("connection refused")
	}
	return f.Leases.ReleaseLease(ctx, name, owner)
}

type electionClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *electionClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *electionClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Two replicas' polling channels on one database: only the leader's Run runs; the
// standby is ready and says so; when the leader is cut off from the database it stops
// polling once its lease has run out, and the standby starts within ElectionTTL. The
// clock and the timers are the test's.
func TestElectedChannelTakeover(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plangate.db")
	clock := &electionClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	type replica struct {
		ch    *electedChannel
		fake  *pollerFake
		tick  chan time.Time
		leads *failingLeases
	}
	mk := func(owner string) replica {
		st, err := store.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		r := replica{fake: &pollerFake{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)},
			tick: make(chan time.Time), leads: &failingLeases{Leases: st}}
		el := &store.Elector{Name: "poller:telegram:bot", Owner: owner, St: r.leads, Now: clock.now, Log: log,
			After: func(time.Duration) <-chan time.Time { return r.tick }}
		r.ch = &electedChannel{Channel: r.fake, el: el, what: "telegram polling", log: log}
		return r
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting: %s", what)
		}
	}
	a, b := mk("host/1/a"), mk("host/2/b")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var early httpserver.ReadyNote
	if err := a.ch.Ready(); err == nil || errors.As(err, &early) || !strings.Contains(err.Error(), "campaigning for telegram polling") {
		t.Errorf("Ready() before any campaign = %v; want not ready (campaigning), not standby", err)
	}
	var wg sync.WaitGroup
	for _, r := range []replica{a, b} {
		wg.Go(func() {
			if err := r.ch.Run(ctx, nil); err != nil {
				t.Error(err)
			}
		})
		if r.ch == a.ch {
			wait(a.fake.started, "the first replica to start polling")
		}
	}
	b.tick <- time.Time{} // b has made its first campaign once it takes the next tick
	if b.ch.el.Leading() || len(b.fake.started) > 0 {
		t.Fatal("the standby polls too")
	}
	var note httpserver.ReadyNote
	if err := b.ch.Ready(); !errors.As(err, &note) || !strings.Contains(string(note), "standby for telegram polling (held by host/1/a)") {
		t.Errorf("standby Ready() = %v", err)
	}
	if err := a.ch.Ready(); err != nil {
		t.Errorf("leader Ready() = %v", err)
	}
	// a renews on its ticks; b stays standing by.
	for range 3 {
		clock.add(store.ElectionEvery)
		a.tick <- time.Time{}
		b.tick <- time.Time{}
	}
	if !a.ch.el.Leading() || b.ch.el.Leading() {
		t.Fatal("the leader changed while it renewed")
	}
	// a is cut off: its renewals fail; it polls on until its lease runs out.
	a.leads.cut.Store(true)
	clock.add(store.ElectionEvery)
	a.tick <- time.Time{}
	b.tick <- time.Time{}
	if len(a.fake.ended) > 0 || b.ch.el.Leading() {
		t.Fatal("the lease changed hands before it expired")
	}
	clock.add(store.ElectionTTL - store.ElectionEvery)
	a.tick <- time.Time{}
	wait(a.fake.ended, "the cut-off leader to stop polling")
	b.tick <- time.Time{}
	wait(b.fake.started, "the standby to take over")
	if err := a.ch.Ready(); !errors.As(err, &note) {
		t.Errorf("the old leader's Ready() = %v, want a standby note", err)
	}
	cancel()
	wg.Wait()
}
