package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// waitWaiting waits until n callers wait for an fsync; it polls the syncer's state, never
// the clock.
func waitWaiting(t *testing.T, s *Store, n int) {
	t.Helper()
	for {
		s.ws.mu.Lock()
		w := s.ws.waiting
		s.ws.mu.Unlock()
		if w >= n {
			return
		}
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDurableWaitsForFsyncBegunAfterCommit: 20 sessions commit durable changes at once;
// each caller returns only after an fsync completed that began when its commit was
// already there (seen by a reader as the fsync began), on the real file.
func TestDurableWaitsForFsyncBegunAfterCommit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	type fsyncRec struct {
		seen map[string]bool // the inbound keys committed when the fsync began
		done bool
	}
	var mu sync.Mutex
	var recs []*fsyncRec
	real := s.ws.fsync
	s.ws.fsync = func(f *os.File) error {
		r := &fsyncRec{seen: map[string]bool{}}
		rows, err := s.r.QueryContext(ctx, `SELECT event_id FROM inbound`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			r.seen[id] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		err = real(f)
		mu.Lock()
		r.done = true
		mu.Unlock()
		return err
	}
	covered := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if r.done && r.seen[id] {
				return true
			}
		}
		return false
	}
	st0 := s.GroupStats()
	const sessions, each = 20, 10
	var wg sync.WaitGroup
	for g := range sessions {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("%d-%d", g, i)
				if _, err := s.Commit(ctx, core.Change{Inbound: &core.InboundKey{Channel: "telegram", Account: "1", EventID: id}}); err != nil {
					t.Error(err)
					return
				}
				if !covered(id) {
					t.Errorf("commit %s returned before an fsync begun after it completed", id)
				}
			}
		})
	}
	wg.Wait()
	st := s.GroupStats()
	if st.Waited-st0.Waited != sessions*each || st.Durable-st0.Durable != int64(len(recs)) {
		t.Errorf("%d waits and %d fsyncs counted, want %d and %d", st.Waited-st0.Waited, st.Durable-st0.Durable, sessions*each, len(recs))
	}
	t.Logf("%d durable commits, %d fsyncs", sessions*each, len(recs))
}

// blockFsync makes the store's fsyncs wait for release; entered receives as each begins.
func blockFsync(s *Store, fail error) (entered chan struct{}, release func()) {
	entered, gate := make(chan struct{}, 16), make(chan struct{})
	real := s.ws.fsync
	s.ws.fsync = func(f *os.File) error {
		entered <- struct{}{}
		<-gate
		if fail != nil {
			return fail
		}
		return real(f)
	}
	return entered, func() { close(gate) }
}

// TestLazyWriteDoesNotWaitForFsync: while an fsync is in flight (blocked), lazy writes
// commit and return; a durable write made meanwhile commits (a reader sees it) but its
// caller returns only after the next fsync, which began after it.
func TestLazyWriteDoesNotWaitForFsync(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	st0 := s.GroupStats()
	entered, release := blockFsync(s, nil)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.SetChannelState(ctx, "t", "a", "first", "v") }()
	<-entered // first's fsync is in flight

	if err := s.SetChannelStateLazy(ctx, "t", "a", "lazy", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, core.Change{Lazy: true, Inbound: &core.InboundKey{Channel: "telegram", Account: "1", EventID: "lazy"}}); err != nil {
		t.Fatal(err)
	}
	go func() { second <- s.SetChannelState(ctx, "t", "a", "second", "v") }()
	waitWaiting(t, s, 2)
	if _, ok, err := s.ChannelState(ctx, "t", "a", "second"); err != nil || !ok {
		t.Fatalf("the second durable save is not committed while it waits: %v %v", ok, err)
	}
	select {
	case err := <-first:
		t.Fatalf("a durable save returned (%v) while its fsync was blocked", err)
	case err := <-second:
		t.Fatalf("a durable save returned (%v) while the fsync in flight had begun before it", err)
	default:
	}
	release()
	if err := errors.Join(<-first, <-second); err != nil {
		t.Fatal(err)
	}
	// The second's commit came after the first fsync began: it needed another.
	if st := s.GroupStats(); st.Durable-st0.Durable != 2 || st.Waited-st0.Waited != 2 {
		t.Errorf("%d fsyncs for %d waits, want 2 for 2", st.Durable-st0.Durable, st.Waited-st0.Waited)
	}
}

// TestDuplicateWaitsForFsync: a durable write that finds its event recorded already
// (a redelivery racing the original) reports the duplicate only once the original is on
// disk, so the platform is not told "handled" on the strength of a commit a power loss
// could still take.
func TestDuplicateWaitsForFsync(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	key := core.InboundKey{Channel: "telegram", Account: "1", EventID: "42"}
	entered, release := blockFsync(s, nil)
	original, again := make(chan error, 1), make(chan error, 1)
	go func() { _, err := s.Commit(ctx, core.Change{Inbound: &key}); original <- err }()
	<-entered
	go func() { _, err := s.Commit(ctx, core.Change{Inbound: &key}); again <- err }()
	waitWaiting(t, s, 2)
	select {
	case err := <-again:
		t.Fatalf("the redelivery returned (%v) before the original's fsync completed", err)
	default:
	}
	release()
	if err := <-original; err != nil {
		t.Fatal(err)
	}
	if err := <-again; !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("the redelivery: err = %v, want ErrDuplicate", err)
	}
}

// TestFsyncErrorFailsDurableCallers: a failed fsync fails the durable callers waiting for
// it with a clear error, and every durable write after it without running (no retry
// that would report a lost page as written), while lazy writes go on.
func TestFsyncErrorFailsDurableCallers(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	entered, release := blockFsync(s, syscall.EIO)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.SetChannelState(ctx, "t", "a", "first", "v") }()
	<-entered
	go func() { second <- s.SetChannelState(ctx, "t", "a", "second", "v") }()
	waitWaiting(t, s, 2)
	if err := s.SetChannelStateLazy(ctx, "t", "a", "lazy", "v"); err != nil {
		t.Fatalf("a lazy save while the failing fsync runs: %v", err)
	}
	release()
	for name, ch := range map[string]chan error{"first": first, "second": second} {
		err := <-ch
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "can no longer make writes durable") {
			t.Errorf("the %s durable save: err = %v, want EIO saying the store can no longer make writes durable", name, err)
		}
	}
	if err := s.Health(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Health() = %v, want the fsync's EIO", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, syscall.EIO) { // what /readyz asks
		t.Errorf("Ping() = %v, want the fsync's EIO: the store answers but cannot make writes durable", err)
	}

	st := s.GroupStats()
	if _, err := s.Commit(ctx, core.Change{Lazy: true, Inbound: &core.InboundKey{Channel: "telegram", Account: "1", EventID: "lazy"}}); err != nil {
		t.Errorf("a lazy commit after the failure: %v", err)
	}
	if err := s.SetChannelState(ctx, "t", "a", "after", "v"); !errors.Is(err, syscall.EIO) {
		t.Errorf("a durable save after the failure: err = %v, want EIO", err)
	}
	if err := s.StartToolRun(ctx, core.ToolRun{SessionID: "s1", CallID: "c1", Tool: "write_file"}); !errors.Is(err, syscall.EIO) {
		t.Errorf("a tool run's start after the failure: err = %v, want EIO", err)
	}
	if _, ok, err := s.ChannelState(ctx, "t", "a", "after"); err != nil || ok {
		t.Errorf("the durable save after the failure was written (%v, %v), want it refused before running", ok, err)
	}
	if after := s.GroupStats(); after.Durable != st.Durable {
		t.Errorf("%d fsyncs after the failure, want none (no retry)", after.Durable-st.Durable)
	}
}

// TestWALTruncatedKeepsFile: wal_checkpoint(TRUNCATE) empties the -wal in place, so the
// syncer keeps fsyncing the descriptor it opened, and a durable write still works.
func TestWALTruncatedKeepsFile(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	held := s.ws.f
	if err := s.SetChannelState(ctx, "t", "a", "k", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the -wal after a truncating checkpoint: %v, %v; want it empty", fi, err)
	}
	var synced []*os.File
	real := s.ws.fsync
	s.ws.fsync = func(f *os.File) error { synced = append(synced, f); return real(f) }
	if err := s.SetChannelState(ctx, "t", "a", "k", "2"); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != held {
		t.Errorf("fsynced %v, want the descriptor opened at start (%p) once", synced, held)
	}
}

// TestWALSyncReopensReplacedFile: should the -wal path name another file than the one
// held, the syncer fsyncs the new one; with no -wal file, there is nothing to sync.
func TestWALSyncReopensReplacedFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(db+"-wal", []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := openWALSync(db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	var synced []os.FileInfo
	w.fsync = func(f *os.File) error {
		fi, err := f.Stat()
		synced = append(synced, fi)
		return err
	}
	if err := os.Remove(db + "-wal"); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(w.ticket()); err != nil || len(synced) != 0 {
		t.Fatalf("no -wal: err %v, %d fsyncs, want nil and none", err, len(synced))
	}
	if err := os.WriteFile(db+"-wal", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(w.ticket()); err != nil {
		t.Fatal(err)
	}
	cur, err := os.Stat(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !os.SameFile(synced[0], cur) {
		t.Errorf("fsynced %d files, want the new -wal once", len(synced))
	}
}
