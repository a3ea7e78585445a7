package storetest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

func testChannelState(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if v, ok, err := s.ChannelState(ctx, "telegram", "bot1", "offset"); err != nil || ok || v != "" {
		t.Fatalf("missing state = %q, %v, %v", v, ok, err)
	}
	for _, v := range []string{"41", "42"} {
		if err := s.SetChannelState(ctx, "telegram", "bot1", "offset", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetChannelState(ctx, "telegram", "bot2", "offset", "7"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := open().ChannelState(ctx, "telegram", "bot1", "offset"); err != nil || !ok || v != "42" {
		t.Fatalf("state = %q, %v, %v; want the latest value 42", v, ok, err)
	}
	if err := s.SetChannelState(ctx, "telegram", "bot1", "", "x"); err == nil {
		t.Fatal("an empty key was accepted")
	}
	if ok, err := s.DeleteChannelState(ctx, "telegram", "bot1", "offset", "41"); err != nil || ok {
		t.Fatalf("deleting a value that changed since = %v, %v; want it kept", ok, err)
	}
	if ok, err := s.DeleteChannelState(ctx, "telegram", "bot1", "offset", "42"); err != nil || !ok {
		t.Fatalf("deleting the value = %v, %v", ok, err)
	}
	if ok, err := s.DeleteChannelState(ctx, "telegram", "bot1", "offset", "42"); err != nil || ok {
		t.Fatalf("deleting what is gone = %v, %v; want false", ok, err)
	}
	if _, ok, err := open().ChannelState(ctx, "telegram", "bot1", "offset"); err != nil || ok {
		t.Fatalf("deleted state still there: %v, %v", ok, err)
	}
	if v, ok, err := s.ChannelState(ctx, "telegram", "bot2", "offset"); err != nil || !ok || v != "7" {
		t.Fatalf("another account's state after a delete = %q, %v, %v", v, ok, err)
	}
}

// SetChannelStateWith saves what value returns when the save runs: concurrent saves of
// one record, each after a change, end with the newest value (an older snapshot never
// overwrites a newer one), and a failing value fails its save alone.
func testChannelStateWith(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	var mu sync.Mutex
	changes := 0
	snapshot := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return strconv.Itoa(changes), nil
	}
	const savers = 20
	var wg sync.WaitGroup
	errs := make(chan error, savers)
	for i := range savers {
		wg.Go(func() {
			mu.Lock()
			changes++
			mu.Unlock()
			errs <- s.SetChannelStateWith(ctx, "telegram", "bot1", "updates", i%2 == 0, snapshot)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SetChannelStateWith: %v", err)
		}
	}
	want := strconv.Itoa(savers)
	if v, ok, err := open().ChannelState(ctx, "telegram", "bot1", "updates"); err != nil || !ok || v != want {
		t.Fatalf("after %d racing saves the record is %q, %v, %v; want the newest, %s", savers, v, ok, err, want)
	}
	boom := errors.New("cannot encode")
	if err := s.SetChannelStateWith(ctx, "telegram", "bot1", "updates", false, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing value: err %v, want %v", err, boom)
	}
	if v, _, err := s.ChannelState(ctx, "telegram", "bot1", "updates"); err != nil || v != want {
		t.Fatalf("after a failed save the record is %q (%v), want still %s", v, err, want)
	}
	if err := s.SetChannelStateWith(ctx, "telegram", "bot1", "", false, snapshot); err == nil {
		t.Fatal("an empty key was accepted")
	}
}

// testLeases runs on the real clock: a store decides expiry by its own clock (PostgreSQL's
// now(); SQLite's is its one host's, the caller's now), which a test cannot step. The
// lapse is a renewal with a ttl of a millisecond, waited out.
func testLeases(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	const ttl = time.Minute
	if _, err := s.Lease(ctx, "poller", time.Now()); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("no lease yet: %v", err)
	}
	now := time.Now()
	l, ok, err := s.AcquireLease(ctx, "poller", "a", now, ttl)
	if err != nil || !ok || l.Owner != "a" || !l.ExpiresAt.Equal(now.Add(ttl)) {
		t.Fatalf("first acquire = %+v, %v, %v; want a's until %v (its own clock)", l, ok, err, now.Add(ttl))
	}
	now = time.Now()
	held, ok, err := s.AcquireLease(ctx, "poller", "b", now, ttl)
	if err != nil || ok || held.Owner != "a" || !held.ExpiresAt.After(now) {
		t.Fatalf("b while a holds = %+v, %v, %v; want refused naming a, live", held, ok, err)
	}
	if l, err := s.Lease(ctx, "poller", now); err != nil || l.Owner != "a" || !l.ExpiresAt.After(now) || l.ExpiresAt.After(now.Add(ttl)) {
		t.Fatalf("Lease = %+v, %v; want a's, ending within the ttl", l, err)
	}
	if _, ok, _ := s.AcquireLease(ctx, "poller", "a", time.Now(), ttl); !ok {
		t.Fatal("the holder could not renew")
	}
	// A renewal for a millisecond: once it lapses, b takes over.
	if _, ok, _ := s.AcquireLease(ctx, "poller", "a", time.Now(), time.Millisecond); !ok {
		t.Fatal("the holder could not renew")
	}
	for i := 0; ; i++ {
		l, ok, err := s.AcquireLease(ctx, "poller", "b", time.Now(), ttl)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if l.Owner != "b" {
				t.Fatalf("takeover = %+v", l)
			}
			break
		}
		if i == 500 {
			t.Fatalf("b never took the lapsed lease: %+v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.ReleaseLease(ctx, "poller", "a"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Lease(ctx, "poller", time.Now()); err != nil || l.Owner != "b" {
		t.Fatalf("a released b's lease: %+v, %v", l, err)
	}
	if err := s.ReleaseLease(ctx, "poller", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lease(ctx, "poller", time.Now()); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("after release: %v", err)
	}
	// Leases filters by prefix, and lists live leases as live.
	for _, name := range []string{"session:x", "session:y", "sessions", "poller"} {
		if _, ok, err := s.AcquireLease(ctx, name, "a", time.Now(), ttl); err != nil || !ok {
			t.Fatalf("acquire %s: %v %v", name, ok, err)
		}
	}
	now = time.Now()
	ls, err := s.Leases(ctx, "session:", now)
	if err != nil || len(ls) != 2 || ls[0].Name != "session:x" || ls[1].Name != "session:y" {
		t.Fatalf("Leases(session:) = %+v, %v", ls, err)
	}
	for _, l := range ls {
		if !l.ExpiresAt.After(now) {
			t.Fatalf("a live lease listed as expired: %+v at %v", l, now)
		}
	}
	if _, _, err := s.AcquireLease(ctx, "poller", "a", time.Now(), 0); err == nil {
		t.Fatal("a zero ttl was accepted")
	}
}

func testToolRuns(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	r1 := core.ToolRun{SessionID: "s1", CallID: "c1", Tool: "write_file", Detail: "write a.txt", StartedAt: at(1)}
	r2 := core.ToolRun{SessionID: "s1", CallID: "c2", Tool: "run", Detail: "make", StartedAt: at(2)}
	r3 := core.ToolRun{SessionID: "s2", CallID: "c1", Tool: "run", Detail: "ls", StartedAt: at(0)}
	for _, r := range []core.ToolRun{r1, r2, r3} {
		if err := s.StartToolRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := open().StartToolRun(ctx, r1); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("starting a call twice: %v, want ErrDuplicate", err)
	}
	fin := r1
	fin.FinishedAt, fin.Outcome = at(3), core.ToolRunOK
	if err := s.FinishToolRun(ctx, fin); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishToolRun(ctx, fin); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("finishing twice: %v, want ErrNotFound", err)
	}
	if err := s.FinishToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "c2"}); err == nil {
		t.Fatal("finishing without an outcome was accepted")
	}
	un, err := s.UnfinishedToolRuns(ctx, "s1")
	if err != nil || !reflect.DeepEqual(un, []core.ToolRun{r2}) {
		t.Fatalf("UnfinishedToolRuns(s1) = %+v, %v", un, err)
	}
	if all, err := s.UnfinishedToolRuns(ctx, ""); err != nil || !reflect.DeepEqual(all, []core.ToolRun{r3, r2}) {
		t.Fatalf("UnfinishedToolRuns(\"\") = %+v, %v", all, err)
	}
	if runs, err := s.ToolRunsOf(ctx, "s1"); err != nil || !reflect.DeepEqual(runs, []core.ToolRun{fin, r2}) {
		t.Fatalf("ToolRunsOf(s1) = %+v, %v", runs, err)
	}
}

func testOutbox(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	cur := seed(t, s, "s1")
	tg := core.Address{Channel: "telegram", Account: "b", Chat: "1"}
	out := []core.Outgoing{
		{Reply: core.Reply{To: cur.Address, Kind: core.ReplyText, Text: "one"}, CreatedAt: at(1)},
		{Reply: core.Reply{To: tg, Text: "two", Buttons: []core.Button{{Label: "Accept"}}}, CreatedAt: at(2)},
		{Reply: core.Reply{To: tg, Text: "three"}, CreatedAt: at(3), Owner: "host/1/abc"},
	}
	commit(t, s, core.Change{SessionID: "s1", Outbox: out})
	if out[0].ID <= 0 || out[1].ID <= out[0].ID || out[2].ID <= out[1].ID || out[0].SessionID != "s1" {
		t.Fatalf("assigned ids %d %d %d (session %q): want increasing", out[0].ID, out[1].ID, out[2].ID, out[0].SessionID)
	}
	unsent, err := open().UnsentOutbox(ctx, []string{"telegram"}, 0)
	if err != nil || len(unsent) != 2 || unsent[0].ID != out[1].ID {
		t.Fatalf("UnsentOutbox(telegram) = %+v, %v", unsent, err)
	}
	jsonEq(t, "outbox reply", unsent[0].Reply, out[1].Reply)
	if !unsent[0].CreatedAt.Equal(at(2)) || unsent[0].SessionID != "s1" || unsent[0].Owner != "" || unsent[1].Owner != "host/1/abc" {
		t.Fatalf("outbox rows = %+v", unsent)
	}
	if lim, _ := s.UnsentOutbox(ctx, nil, 1); len(lim) != 1 || lim[0].ID != out[0].ID {
		t.Fatalf("UnsentOutbox limit 1 = %+v", lim)
	}
	if err := s.NoteOutboxAttempt(ctx, out[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, out[0].ID, "m1", at(4)); err != nil {
		t.Fatal(err)
	}
	if err := s.DropOutbox(ctx, out[1].ID, "too old"); err != nil {
		t.Fatal(err)
	}
	if err := s.NoteOutboxAttempt(ctx, out[2].ID); err != nil {
		t.Fatal(err)
	}
	left, err := s.UnsentOutbox(ctx, []string{"telegram", cur.Address.Channel}, 0)
	if err != nil || len(left) != 1 || left[0].ID != out[2].ID || left[0].Attempts != 1 {
		t.Fatalf("after sending and dropping: %+v, %v", left, err)
	}
	// A claim compares the attempts the row was listed with: of two handles that listed
	// it, one gets it; sent and dropped rows are never claimed.
	other := open()
	if got, err := s.ClaimOutbox(ctx, out[2].ID, 1); err != nil || !got {
		t.Fatalf("ClaimOutbox(listed with 1 attempt) = %v, %v; want true", got, err)
	}
	if got, err := other.ClaimOutbox(ctx, out[2].ID, 1); err != nil || got {
		t.Fatalf("a second ClaimOutbox with the same attempts = %v, %v; want false", got, err)
	}
	for _, id := range []int64{out[0].ID, out[1].ID} {
		if got, err := other.ClaimOutbox(ctx, id, 1); err != nil || got {
			t.Fatalf("ClaimOutbox of sent or dropped row %d = %v, %v; want false", id, got, err)
		}
	}
	if left, _ := s.UnsentOutbox(ctx, nil, 0); len(left) != 1 || left[0].Attempts != 2 {
		t.Fatalf("after the claim: %+v; want the row unsent with 2 attempts", left)
	}
	// Pruning removes finished rows created before the cut, never unsent ones.
	if n, err := s.PruneOutbox(ctx, at(2)); err != nil || n != 1 {
		t.Fatalf("PruneOutbox(at 2) = %d, %v; want 1 (the sent one)", n, err)
	}
	if n, err := s.PruneOutbox(ctx, at(10)); err != nil || n != 1 {
		t.Fatalf("PruneOutbox(at 10) = %d, %v; want 1 (the dropped one)", n, err)
	}
	if left, _ := s.UnsentOutbox(ctx, nil, 0); len(left) != 1 {
		t.Fatalf("pruning removed an unsent reply: %+v", left)
	}
}

func testPruning(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	seed(t, s, "s1")
	old := core.InboundKey{Channel: "slack", Account: "T1", EventID: "old"}
	commit(t, s, core.Change{SessionID: "s1", Inbound: &old})
	cut := time.Now().Add(time.Hour) // the store stamps inbound keys with its own clock
	if n, err := s.PruneInbound(ctx, cut.Add(-48*time.Hour)); err != nil || n != 0 {
		t.Fatalf("PruneInbound before the key = %d, %v; want 0", n, err)
	}
	if n, err := s.PruneInbound(ctx, cut); err != nil || n != 1 {
		t.Fatalf("PruneInbound = %d, %v; want 1", n, err)
	}
	if seen, _ := s.SeenInbound(ctx, old); seen {
		t.Fatal("a pruned key is still seen")
	}
	commit(t, s, core.Change{SessionID: "s1", Inbound: &old}) // forgotten, so accepted again
}

// testSignOuts: a sign-out recorded by one instance is seen by another (a replica, or the
// process after a restart), and pruning forgets only those whose cookie has expired.
func testSignOuts(t *testing.T, open func() Store) {
	ctx := context.Background()
	a, b := open(), open()
	if out, err := b.SignedOut(ctx, "n1"); err != nil || out {
		t.Fatalf("before any sign-out: %v, %v", out, err)
	}
	if err := a.SignOut(ctx, "n1", at(10)); err != nil {
		t.Fatal(err)
	}
	if err := a.SignOut(ctx, "n2", at(60)); err != nil {
		t.Fatal(err)
	}
	if err := a.SignOut(ctx, "n1", at(10)); err != nil {
		t.Fatalf("signing out twice: %v", err)
	}
	if err := a.SignOut(ctx, "", at(10)); err == nil {
		t.Fatal("an empty nonce was accepted")
	}
	for _, n := range []string{"n1", "n2"} {
		if out, err := b.SignedOut(ctx, n); err != nil || !out {
			t.Fatalf("%s on the other instance: %v, %v; want signed out", n, out, err)
		}
	}
	if n, err := b.PruneSignOuts(ctx, at(30)); err != nil || n != 1 {
		t.Fatalf("pruning at 30 min = %d, %v; want n1 only", n, err)
	}
	if out, _ := a.SignedOut(ctx, "n1"); out {
		t.Fatal("n1 survived pruning")
	}
	if out, _ := a.SignedOut(ctx, "n2"); !out {
		t.Fatal("pruning removed n2, whose cookie has not expired")
	}
}
