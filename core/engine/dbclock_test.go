package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pgProcess is another replica on the harness's PostgreSQL database, with its own clock.
func (h *harness) pgProcess(clock func() time.Time, tools core.Toolbox) *process {
	h.t.Helper()
	st, err := store.OpenDriver(context.Background(), h.driver, h.target)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { st.Close() })
	p := &process{st: st, out: &recorder{}, model: newFakeModel(), log: &bytes.Buffer{}}
	log := slog.New(slog.NewTextHandler(&syncWriter{w: p.log}, nil))
	p.eng = engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: p.model, Tools: tools, Out: p.out, Log: log,
		Now: clock, Owner: fmt.Sprintf("test-process-%d", processes.Add(1))})
	return p
}

// Replicas whose clocks are five minutes off, on one PostgreSQL: session leases are
// decided by the database's clock. While A runs a mutating tool under the session's
// lease, a replica whose clock is ahead neither resumes the session nor answers a message
// for it (under its own clock A's lease ended minutes ago). Once A is gone and its lease
// has ended by the database's clock, a replica whose clock is behind (by which the lease
// would run five minutes more) resumes the session at once, and the tool is not run again.
// Counted from the store (tool runs, the lease row) and the model calls of each replica.
func TestSessionLeaseBySkewedClocks(t *testing.T) {
	h := newHarnessOn(t, store.DriverPostgres, pgtest.Schema(t))
	ctx := context.Background()
	base := h.clock
	toolsA := &recTools{block: make(chan struct{}), entered: make(chan struct{})}
	a := h.pgProcess(func() time.Time { return base }, toolsA)
	toScopedPending(t, h, a, "a")
	a.model.push(sessionID("a"), calls(writeNotes("# Notes\n")))
	actx, kill := context.WithCancel(ctx)
	done := a.eng.Enqueue(actx, evMsg(h, "a", "ev-accept", "/plan accept"))
	<-toolsA.entered
	defer func() { close(toolsA.block); <-done }()
	name := engine.SessionLease(sessionID("a"))
	holder := func() (core.Lease, error) { return h.st.Lease(ctx, name, time.Now()) }
	lease, err := holder()
	if err != nil {
		t.Fatal(err)
	}
	runs := func() int {
		t.Helper()
		all, err := h.st.ToolRunsOf(ctx, sessionID("a"))
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}

	toolsB := &recTools{}
	b := h.pgProcess(func() time.Time { return base.Add(5 * time.Minute) }, toolsB)
	if n, err := b.eng.Resume(ctx, nil); err != nil || n != 0 {
		t.Fatalf("the replica ahead resumed %d sessions (%v); A holds the lease", n, err)
	}
	if err := b.eng.Handle(ctx, core.Message{ID: "ev-b", Address: addr("a"), Sender: core.Person{ID: "local", Name: "local"},
		Text: "how is it going?", Time: base.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := len(b.model.requests()); got != 0 || toolsB.count() != 0 || runs() != 1 {
		t.Fatalf("the replica ahead ran a turn under A's live lease: %d model calls, %d tool calls, %d tool runs stored; log %s",
			got, toolsB.count(), runs(), b.log)
	}
	if l, err := holder(); err != nil || l.Owner != lease.Owner {
		t.Fatalf("the lease is %+v (%v), want still A's (%s)", l, err, lease.Owner)
	}

	// A dies in the tool call, its last renewal for a millisecond.
	kill()
	if _, ok, err := h.st.AcquireLease(ctx, name, lease.Owner, time.Now(), time.Millisecond); err != nil || !ok {
		t.Fatalf("A's last renewal: %v %v", ok, err)
	}
	for i := 0; ; i++ {
		l, err := holder()
		if err != nil {
			t.Fatal(err)
		}
		if !l.ExpiresAt.After(time.Now()) {
			break // ended by the database's clock
		}
		if i == 500 {
			t.Fatalf("A's lease never ended: %+v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	toolsC := &recTools{}
	c := h.pgProcess(func() time.Time { return base.Add(-5 * time.Minute) }, toolsC)
	c.model.push(sessionID("a"), text("NOTES.md is there; continuing."))
	if n, err := c.eng.Resume(ctx, nil); err != nil || n != 1 {
		t.Fatalf("the replica behind resumed %d sessions (%v), want 1: A's lease ended by the database's clock; log %s", n, err, c.log)
	}
	if toolsA.count() != 1 || toolsB.count() != 0 || toolsC.count() != 0 || runs() != 1 {
		t.Fatalf("write_file ran %d+%d+%d times (%d runs stored), want once", toolsA.count(), toolsB.count(), toolsC.count(), runs())
	}
	if got := len(c.model.requests()); got == 0 || len(b.model.requests()) != 0 {
		t.Fatalf("model calls: behind %d, ahead %d; want the resumed turn behind only", got, len(b.model.requests()))
	}
	if un, err := h.st.UnfinishedToolRuns(ctx, sessionID("a")); err != nil || len(un) != 0 {
		t.Fatalf("unfinished tool runs after the resume: %+v, %v", un, err)
	}
}

// Replica liveness by the database's clock: a replica is gone once its replica lease has
// ended by the database's clock, whatever the clock of the replica that looks. A replica
// whose clock is behind delivers what a dead replica left at once (by its own clock the
// lease would run five minutes more), and one whose clock is ahead leaves a live
// replica's unsent reply to that replica (by its own clock the lease ended minutes ago).
// Counted from the outbox rows left unsent and each replica's sends.
func TestReplicaLivenessBySkewedClocks(t *testing.T) {
	h := newHarnessOn(t, store.DriverPostgres, pgtest.Schema(t))
	ctx := context.Background()
	const live, dead = "elsewhere/1/live", "elsewhere/2/dead"
	for chat, owner := range map[string]string{"live": live, "dead": dead} {
		h.say(chat, "local", "/plan on")
		s := h.session(chat)
		row := core.Outgoing{Reply: core.Reply{To: addr(chat), Text: "left unsent in " + chat}, CreatedAt: time.Now(), Owner: owner}
		if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: []core.Outgoing{row}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(live), live, time.Now(), time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The dead replica's last renewal was for a millisecond; wait until it has ended.
	if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(dead), dead, time.Now(), time.Millisecond); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for i := 0; ; i++ {
		l, err := h.st.Lease(ctx, engine.ReplicaLease(dead), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !l.ExpiresAt.After(time.Now()) {
			break
		}
		if i == 500 {
			t.Fatalf("the dead replica's lease never ended: %+v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	unsent := func() []string {
		t.Helper()
		rows, err := h.st.UnsentOutbox(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var owners []string
		for _, o := range rows {
			owners = append(owners, o.Owner)
		}
		return owners
	}

	behind := h.pgProcess(func() time.Time { return time.Now().Add(-5 * time.Minute) }, nil)
	if sent, err := behind.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour); err != nil || sent != 1 || behind.out.count() != 1 {
		t.Fatalf("the replica behind sent %d (%d replies, %v); want the dead replica's one; log %s", sent, behind.out.count(), err, behind.log)
	}
	if got := unsent(); len(got) != 1 || got[0] != live {
		t.Fatalf("unsent rows of %q; want the live replica's only", got)
	}
	ahead := h.pgProcess(func() time.Time { return time.Now().Add(5 * time.Minute) }, nil)
	if sent, err := ahead.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour); err != nil || sent != 0 || ahead.out.count() != 0 {
		t.Fatalf("the replica ahead sent %d (%d replies, %v); the live replica's row is its own", sent, ahead.out.count(), err)
	}
	if got := unsent(); len(got) != 1 || got[0] != live {
		t.Fatalf("unsent rows of %q; want the live replica's still", got)
	}
}
