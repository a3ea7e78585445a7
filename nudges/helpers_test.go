package nudges_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// delivery is one call of a fake deliverer.
type delivery struct {
	id          int64
	session     string
	action      core.NudgeAction
	scheduledAt time.Time
	at          time.Time // the clock when it was delivered
}

// missedReport is one ReportMissed call.
type missedReport struct {
	session string
	ids     []int64
	times   []time.Time
	at      time.Time
}

// fakeDeliverer records what the scheduler hands over. hook, when set, runs first on every
// Nudge call and may panic (nothing is recorded) or return an error (the call is recorded
// and the error returned).
type fakeDeliverer struct {
	mu     sync.Mutex
	nudges []delivery
	missed []missedReport
	hook   func(n core.Nudge) error
}

func (f *fakeDeliverer) Nudge(_ context.Context, n core.Nudge, scheduledAt time.Time) error {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	var err error
	if hook != nil {
		err = hook(n) // a panic here means the call is not recorded
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nudges = append(f.nudges, delivery{id: n.ID, session: n.SessionID, action: n.Action, scheduledAt: scheduledAt, at: time.Now()})
	return err
}

func (f *fakeDeliverer) ReportMissed(_ context.Context, sessionID string, missed []core.MissedNudge) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := missedReport{session: sessionID, at: time.Now()}
	for _, m := range missed {
		r.ids = append(r.ids, m.Nudge.ID)
		r.times = append(r.times, m.ScheduledAt)
	}
	f.missed = append(f.missed, r)
	return nil
}

func (f *fakeDeliverer) delivered() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]delivery(nil), f.nudges...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].scheduledAt.Equal(out[j].scheduledAt) {
			return out[i].scheduledAt.Before(out[j].scheduledAt)
		}
		return out[i].id < out[j].id
	})
	return out
}

func (f *fakeDeliverer) reports() []missedReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]missedReport(nil), f.missed...)
}

// describe renders deliveries as "id@offset>late" relative to start, for readable diffs.
func describe(ds []delivery, start time.Time) []string {
	out := []string{}
	for _, d := range ds {
		s := fmt.Sprintf("%d@%s", d.id, d.scheduledAt.Sub(start))
		if late := d.at.Sub(d.scheduledAt); late != 0 {
			s += fmt.Sprintf(" (delivered +%s)", late)
		}
		out = append(out, s)
	}
	return out
}

// openStore opens a store on a fresh file; it is closed when the test ends (inside the
// synctest bubble when called from one, as the bubble requires).
func openStore(t testing.TB) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plangate.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// seed stores schedules for a session (created when new) and returns them with their ids,
// in the order given.
func seed(t testing.TB, st *store.Store, sid string, ns ...core.Nudge) []core.Nudge {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Session(ctx, sid); err != nil {
		if _, err := st.Commit(ctx, core.Change{Session: &core.Session{ID: sid, Phase: core.PhaseAwaitingApproval}}); err != nil {
			t.Fatal(err)
		}
	}
	known := map[int64]bool{}
	for _, n := range listNudges(t, st, sid) {
		known[n.ID] = true
	}
	if _, err := st.Commit(ctx, core.Change{SessionID: sid, Nudges: ns}); err != nil {
		t.Fatal(err)
	}
	var out []core.Nudge
	for _, n := range listNudges(t, st, sid) {
		if !known[n.ID] {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func listNudges(t testing.TB, st *store.Store, sid string) []core.Nudge {
	t.Helper()
	ns, err := st.Nudges(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func nudgeByID(t testing.TB, st *store.Store, id int64) core.Nudge {
	t.Helper()
	for _, n := range listNudges(t, st, "") {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no nudge %d", id)
	return core.Nudge{}
}

// remindAt is a one-shot reminder at start+d, as the engine makes them.
func remindAt(start time.Time, d time.Duration) core.Nudge {
	return core.Nudge{Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: d.String(), NextFireAt: start.Add(d), CreatedAt: start}
}

func expireAt(start time.Time, d time.Duration) core.Nudge {
	n := remindAt(start, d)
	n.Action = core.NudgeExpire
	return n
}

func recurring(spec string, first, created time.Time) core.Nudge {
	return core.Nudge{Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: spec, NextFireAt: first, CreatedAt: created}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newBufLogger(b *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start runs a scheduler until the returned stop is called; stop waits for Run to return
// and fails the test if it returned an error.
func start(t testing.TB, s *nudges.Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
