package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// rounds is how many times each race is run; a race that picks two winners once in a
// while must show up here, yet the suite stays quick on a shared machine.
const rounds = 20

// race runs fn(0) and fn(1) at the same moment and returns their errors.
func race(fn func(i int) error) [2]error {
	var (
		errs  [2]error
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range 2 {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one of errs is nil and the other wraps want.
func oneWinner(t *testing.T, what string, errs [2]error, want error) int {
	t.Helper()
	switch {
	case errs[0] == nil && errs[1] == nil:
		t.Fatalf("%s: both won", what)
	case errs[0] == nil && errors.Is(errs[1], want):
		return 0
	case errs[1] == nil && errors.Is(errs[0], want):
		return 1
	}
	t.Fatalf("%s: errors %v and %v; want one nil and one %v", what, errs[0], errs[1], want)
	return -1
}

func testRacingCommits(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	cur := seed(t, st[0], "s1")
	for r := range rounds {
		errs := race(func(i int) error {
			next := cur
			next.LastFeedback = fmt.Sprintf("r%d-i%d", r, i)
			_, err := st[i].Commit(ctx, core.Change{Session: &next,
				Events:   []core.Event{{Kind: core.EventStepUpdated, Detail: next.LastFeedback}},
				Messages: []core.ChatMessage{{Role: core.RoleAssistant, Content: next.LastFeedback}}})
			return err
		})
		w := oneWinner(t, fmt.Sprintf("round %d", r), errs, core.ErrConflict)
		got, err := st[1-w].Session(ctx, "s1")
		if err != nil || got.Version != cur.Version+1 || got.LastFeedback != fmt.Sprintf("r%d-i%d", r, w) {
			t.Fatalf("round %d: stored %+v, %v; want the winner's change at version %d", r, got, err, cur.Version+1)
		}
		cur = got
	}
	// Only the winners' audit rows and messages exist, in order.
	evs, _ := st[0].Events(ctx, "s1")
	msgs, _ := st[1].Transcript(ctx, "s1", 0)
	if len(evs) != rounds || len(msgs) != rounds {
		t.Fatalf("%d events and %d messages after %d rounds; want one each per round", len(evs), len(msgs), rounds)
	}
	for r := range rounds {
		if evs[r].Detail != msgs[r].Content || !strings.HasPrefix(evs[r].Detail, fmt.Sprintf("r%d-", r)) {
			t.Fatalf("round %d: event %q and message %q do not match the winner", r, evs[r].Detail, msgs[r].Content)
		}
	}
}

func testRacingInserts(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	for r := range rounds {
		id := fmt.Sprintf("new-%d", r)
		errs := race(func(i int) error {
			se := plainSession(id)
			se.Owner = fmt.Sprint(i)
			_, err := st[i].Commit(ctx, core.Change{Session: &se, Plans: []core.Plan{{ID: id + "-p", Version: 1,
				Status: core.PlanPending, ApprovalID: fmt.Sprintf("%s-a%d", id, i)}}})
			return err
		})
		w := oneWinner(t, "insert "+id, errs, core.ErrConflict)
		if se, err := st[0].Session(ctx, id); err != nil || se.Owner != fmt.Sprint(w) || se.Version != 1 {
			t.Fatalf("%s: stored %+v, %v; want the winner %d's row", id, se, err, w)
		}
		if _, err := st[0].PlanByApproval(ctx, fmt.Sprintf("%s-a%d", id, 1-w)); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("%s: the loser's plan was stored (%v)", id, err)
		}
	}
}

func testRacingInbound(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	seed(t, st[0], "a")
	seed(t, st[0], "b")
	for r := range rounds {
		key := core.InboundKey{Channel: "slack", Account: "T1", EventID: fmt.Sprintf("Ev%d", r)}
		// Two replicas receive the same delivery; they touch different sessions, so only
		// the inbound key can stop the second.
		errs := race(func(i int) error {
			_, err := st[i].Commit(ctx, core.Change{SessionID: []string{"a", "b"}[i], Inbound: &key,
				Messages: []core.ChatMessage{{Role: core.RoleUser, Content: key.EventID}}})
			return err
		})
		oneWinner(t, key.EventID, errs, core.ErrDuplicate)
	}
	ma, _ := st[0].Transcript(ctx, "a", 0)
	mb, _ := st[0].Transcript(ctx, "b", 0)
	if len(ma)+len(mb) != rounds {
		t.Fatalf("%d+%d messages for %d events; want one per event", len(ma), len(mb), rounds)
	}
}

func testRacingNudgeClaims(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	seed(t, st[0], "s1")
	const every = time.Hour
	commit(t, st[0], core.Change{SessionID: "s1", Nudges: []core.Nudge{{Kind: core.NudgeRecurring,
		Action: core.NudgeRemind, Spec: "@every 1h", NextFireAt: at(60), CreatedAt: at(0)}}})
	ns, _ := st[0].Nudges(ctx, "s1")
	id := ns[0].ID
	claims := [2]int{}
	for r := range rounds {
		sched := at(60).Add(time.Duration(r) * every)
		var oks [2]bool
		errs := race(func(i int) error {
			var err error
			oks[i], err = st[i].FireNudge(ctx, id, sched, store.NudgeFired, sched, sched.Add(every))
			return err
		})
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("occurrence %d: errors %v, %v", r, errs[0], errs[1])
		}
		if oks[0] == oks[1] {
			t.Fatalf("occurrence %d: claimed by %v and %v; want exactly one", r, oks[0], oks[1])
		}
		if oks[0] {
			claims[0]++
		} else {
			claims[1]++
		}
	}
	ledger, err := st[1].NudgeFirings(ctx, id)
	if err != nil || len(ledger) != rounds {
		t.Fatalf("ledger has %d rows (%v); want %d", len(ledger), err, rounds)
	}
	ns, _ = st[1].Nudges(ctx, "s1")
	if ns[0].Fired != rounds || !ns[0].NextFireAt.Equal(at(60).Add(rounds*every)) {
		t.Fatalf("schedule after %d claims (%v by instance) = %+v", rounds, claims, ns[0])
	}
}

func testRacingLeases(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	for r := range rounds {
		name := fmt.Sprintf("poller-%d", r)
		var oks [2]bool
		errs := race(func(i int) error {
			var err error
			_, oks[i], err = st[i].AcquireLease(ctx, name, fmt.Sprintf("replica-%d", i), at(r), time.Minute)
			return err
		})
		if errs[0] != nil || errs[1] != nil || oks[0] == oks[1] {
			t.Fatalf("lease %s: acquired %v/%v, errors %v/%v; want exactly one holder", name, oks[0], oks[1], errs[0], errs[1])
		}
		l, err := st[0].Lease(ctx, name, at(r))
		w := 0
		if oks[1] {
			w = 1
		}
		if err != nil || l.Owner != fmt.Sprintf("replica-%d", w) {
			t.Fatalf("lease %s held by %+v (%v); want replica-%d", name, l, err, w)
		}
	}
}

// testRacingLeaseRelease: two processes take and release one lease over and over. A
// refused take names the other holder even when that holder released the lease between
// the refused write and the read of who holds it; it never fails.
func testRacingLeaseRelease(t *testing.T, open func() Store) {
	ctx := context.Background()
	st := [2]Store{open(), open()}
	errs := race(func(i int) error {
		owner := fmt.Sprintf("replica-%d", i)
		for r := range 10 * rounds {
			l, ok, err := st[i].AcquireLease(ctx, "session:s1", owner, at(0), time.Minute)
			switch {
			case err != nil:
				return fmt.Errorf("take %d: %w", r, err)
			case !ok && (l.Owner == owner || l.Owner == ""):
				return fmt.Errorf("take %d: refused, held by %q", r, l.Owner)
			case ok:
				if err := st[i].ReleaseLease(ctx, "session:s1", owner); err != nil {
					return fmt.Errorf("release %d: %w", r, err)
				}
			}
		}
		return nil
	})
	if err := errors.Join(errs[0], errs[1]); err != nil {
		t.Fatal(err)
	}
}
