package store

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// holdWriter queues a write that blocks until the returned release is called, so the
// commits started meanwhile all wait for the same next batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), false, func(ctx context.Context, tx *sql.Conn, _ time.Time) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("the holding write: %v", err)
		}
	}
}

// waitQueued waits until n writes wait in the queue (the test's goroutines have all
// called Commit); it polls the queue, never the clock.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for {
		s.gc.mu.Lock()
		q := len(s.gc.queue)
		s.gc.mu.Unlock()
		if q >= n {
			return
		}
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommit: changes of many sessions that arrive while a commit is in flight
// share one transaction, and each caller gets its own result: the one that lost its
// compare-and-set gets ErrConflict, the replayed event ErrDuplicate, and only their own
// writes are undone.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	const n = 12
	cur := make([]core.Session, n)
	for i := range cur {
		var err error
		cur[i], err = s.Commit(ctx, core.Change{Session: &core.Session{ID: fmt.Sprintf("s%d", i), Phase: core.PhaseOff, Owner: "u"},
			Inbound: &core.InboundKey{Channel: "telegram", Account: "1", EventID: fmt.Sprintf("first-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	const conflicting, duplicate = 3, 7
	st0 := s.GroupStats()

	release := holdWriter(t, s)
	results := make([]error, n)
	outs := make([]core.Session, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			se := cur[i]
			se.RejectionCount = 1
			if i == conflicting {
				se.Version = 99 // another writer moved on
			}
			event := fmt.Sprintf("second-%d", i)
			if i == duplicate {
				event = fmt.Sprintf("first-%d", i) // a replay
			}
			outs[i], results[i] = s.Commit(ctx, core.Change{Session: &se,
				Inbound:  &core.InboundKey{Channel: "telegram", Account: "1", EventID: event},
				Messages: []core.ChatMessage{{Role: core.RoleUser, Content: fmt.Sprintf("hello %d", i)}}})
		})
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()

	// One fsync may cover both batches (when the hold's caller starts it after the second
	// commit), or each its own; never one per caller. Every caller waited, the two that
	// failed too: a conflict and a duplicate speak of commits.
	st := s.GroupStats()
	if st.Batches-st0.Batches != 2 || st.Writes-st0.Writes != n+1 || st.Durable-st0.Durable > 2 || st.Durable == st0.Durable {
		t.Errorf("ran %d batches (%d fsyncs) holding %d writes, want 2 batches holding %d (the hold, then all at once), 1 or 2 fsyncs",
			st.Batches-st0.Batches, st.Durable-st0.Durable, st.Writes-st0.Writes, n+1)
	}
	if st.Waited-st0.Waited != n+1 {
		t.Errorf("%d durable writes waited for an fsync, want %d", st.Waited-st0.Waited, n+1)
	}
	for i, err := range results {
		switch i {
		case conflicting:
			if !errors.Is(err, core.ErrConflict) {
				t.Errorf("session %d: err = %v, want ErrConflict", i, err)
			}
		case duplicate:
			if !errors.Is(err, core.ErrDuplicate) {
				t.Errorf("session %d: err = %v, want ErrDuplicate", i, err)
			}
		default:
			if err != nil || outs[i].Version != 2 || outs[i].RejectionCount != 1 {
				t.Errorf("session %d: %+v, %v; want version 2", i, outs[i], err)
			}
		}
	}

	// A new process sees exactly the changes that succeeded.
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for i := range n {
		se, err := s2.Session(ctx, fmt.Sprintf("s%d", i))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := s2.Transcript(ctx, se.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen, err := s2.SeenInbound(ctx, core.InboundKey{Channel: "telegram", Account: "1", EventID: fmt.Sprintf("second-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		failed := i == conflicting || i == duplicate
		if wantV := map[bool]int64{true: 1, false: 2}[failed]; se.Version != wantV {
			t.Errorf("session %d: version %d after reopen, want %d", i, se.Version, wantV)
		}
		if failed == (len(tr) == 1) {
			t.Errorf("session %d (failed %v): transcript %+v", i, failed, tr)
		}
		if failed == seen {
			t.Errorf("session %d (failed %v): inbound recorded = %v", i, failed, seen)
		}
	}
}

// TestGroupCommitLazy: every batch runs at synchronous=NORMAL, lazy, durable or mixed
// (durability is the fsync after it, walsync.go); in a mixed batch only the durable
// caller waits for an fsync.
func TestGroupCommitLazy(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	syncMode := func(lazy bool) (int, error) {
		var mode int
		err := s.write(ctx, lazy, func(ctx context.Context, tx *sql.Conn, _ time.Time) error {
			return tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode)
		})
		return mode, err
	}
	st0 := s.GroupStats()
	if m, err := syncMode(true); err != nil || m != 1 {
		t.Fatalf("a lazy batch runs at synchronous=%d (%v), want 1 (NORMAL)", m, err)
	}
	if st := s.GroupStats(); st.Waited != st0.Waited || st.Durable != st0.Durable {
		t.Errorf("a lazy write waited for %d fsyncs (%d run), want none", st.Waited-st0.Waited, st.Durable-st0.Durable)
	}
	if m, err := syncMode(false); err != nil || m != 1 {
		t.Fatalf("a durable batch runs at synchronous=%d (%v), want 1 (NORMAL)", m, err)
	}
	if st := s.GroupStats(); st.Waited != st0.Waited+1 || st.Durable != st0.Durable+1 {
		t.Errorf("a durable write: %d waits, %d fsyncs, want 1 and 1", st.Waited-st0.Waited, st.Durable-st0.Durable)
	}

	st0 = s.GroupStats()
	release := holdWriter(t, s)
	modes := make([]int, 3)
	var wg sync.WaitGroup
	for i, lazy := range []bool{true, false, true} {
		wg.Go(func() {
			m, err := syncMode(lazy)
			if err != nil {
				t.Error(err)
			}
			modes[i] = m
		})
	}
	waitQueued(t, s, 3)
	release()
	wg.Wait()
	for i, m := range modes {
		if m != 1 {
			t.Errorf("write %d of a mixed batch ran at synchronous=%d, want 1 (NORMAL)", i, m)
		}
	}
	// The hold and the durable write of the batch waited; the lazy ones did not.
	if st := s.GroupStats(); st.Waited != st0.Waited+2 || st.Batches != st0.Batches+2 {
		t.Errorf("a mixed batch after the hold: %d waits in %d batches, want 2 in 2", st.Waited-st0.Waited, st.Batches-st0.Batches)
	}
}

// TestGroupCommitCancelled: a caller whose context ended before its batch ran gets the
// context's error and writes nothing; the batch's others commit.
func TestGroupCommitCancelled(t *testing.T) {
	s, _ := openTest(t)
	release := holdWriter(t, s)
	cctx, cancel := context.WithCancel(context.Background())
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, ctx := range []context.Context{cctx, context.Background()} {
		wg.Go(func() {
			_, errs[i] = s.Commit(ctx, core.Change{Session: &core.Session{ID: fmt.Sprintf("c%d", i), Phase: core.PhaseOff, Owner: "u"}})
		})
	}
	waitQueued(t, s, 2)
	cancel()
	release()
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) || errs[1] != nil {
		t.Fatalf("errors = %v, want context.Canceled and nil", errs)
	}
	if _, err := s.Session(context.Background(), "c0"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the cancelled change was written: %v", err)
	}
	if _, err := s.Session(context.Background(), "c1"); err != nil {
		t.Errorf("the other change: %v", err)
	}
}

// crashEnv makes the test binary act as the committing process of TestGroupCommitCrash.
const crashEnv = "PLANGATE_STORE_CRASH_DB"

// TestGroupCommitCrash kills a process that commits from many goroutines at once and
// reopens its store: every change the process was told is committed is there. (A killed
// process keeps what reached the OS; what the fsync adds is not observable here.)
func TestGroupCommitCrash(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCommitCrash$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked = append(acked, id)
		}
		if len(acked) == 200 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 200 {
		t.Fatalf("the child acknowledged only %d commits", len(acked))
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range acked {
		se, err := s.Session(context.Background(), id)
		if err != nil || se.RejectionCount != 1 {
			t.Errorf("acknowledged change of %s after the crash: %+v, %v", id, se, err)
		}
	}
}

// crashChild commits forever from 20 goroutines and prints each acknowledgement.
func crashChild(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				if _, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: id, Phase: core.PhaseOff, Owner: "u", RejectionCount: 1},
					Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "x"}}}); err != nil {
					fmt.Println("commit:", err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Println("acked", id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestGroupCommitPanic: a write that panics (a caller up the stack may recover) rolls
// back and does not leave the queue blocked for the writes after it.
func TestGroupCommitPanic(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		_ = s.write(ctx, false, func(ctx context.Context, tx *sql.Conn, now time.Time) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO channel_state (channel, account, key, value, updated_at)
				VALUES ('t', 'a', 'k', 'v', ?)`, formatTime(now)); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if _, err := s.Commit(ctx, core.Change{Session: &core.Session{ID: "after", Phase: core.PhaseOff, Owner: "u"}}); err != nil {
		t.Fatalf("a commit after the panic: %v", err)
	}
	if _, ok, err := s.ChannelState(ctx, "t", "a", "k"); err != nil || ok {
		t.Errorf("the panicking write was kept: %v, %v", ok, err)
	}
}

// TestGroupCommitMergesStateSaves: saves of one channel-state record queued behind the
// same batch are merged into the last, whose value is computed once, when it runs; every
// caller gets its outcome, and a save of another record in the batch still runs.
func TestGroupCommitMergesStateSaves(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var mu sync.Mutex
	calls, version := 0, 0
	value := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return strconv.Itoa(version), nil
	}
	const n = 8
	release := holdWriter(t, s)
	errs := make(chan error, n+1)
	var wg sync.WaitGroup
	for range n {
		mu.Lock()
		version++
		mu.Unlock()
		wg.Go(func() { errs <- s.SetChannelStateWith(ctx, "telegram", "1", "updates", false, value) })
	}
	wg.Go(func() {
		errs <- s.SetChannelStateWith(ctx, "slack", "1", "inbox", true, func() (string, error) { return "other", nil })
	})
	waitQueued(t, s, n+1)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("the value of %d merged saves was computed %d times, want once", n, calls)
	}
	if v, _, err := s.ChannelState(ctx, "telegram", "1", "updates"); err != nil || v != strconv.Itoa(n) {
		t.Errorf("record = %q (%v), want %d", v, err, n)
	}
	if v, _, err := s.ChannelState(ctx, "slack", "1", "inbox"); err != nil || v != "other" {
		t.Errorf("the other record = %q (%v), want other", v, err)
	}
}

func TestMergeJobs(t *testing.T) {
	a, b, c, d := &writeJob{merge: "x"}, &writeJob{}, &writeJob{merge: "x"}, &writeJob{merge: "y"}
	kept, merged := mergeJobs([]*writeJob{a, b, c, d})
	if len(kept) != 3 || kept[0] != b || kept[1] != c || kept[2] != d {
		t.Errorf("kept %v, want b, c, d", kept)
	}
	if len(merged) != 1 || merged[a] != c {
		t.Errorf("merged %v, want a into c", merged)
	}
	if kept, merged := mergeJobs([]*writeJob{b}); len(kept) != 1 || merged != nil {
		t.Errorf("nothing to merge: kept %v, merged %v", kept, merged)
	}
}
