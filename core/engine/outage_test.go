package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// outageStore is the real store whose Commits fail, with an error the SQLite driver
// really returned, while fail says so (it sees each Change and how many failed so far).
type outageStore struct {
	*store.Store
	err error

	mu     sync.Mutex
	fail   func(ch core.Change, failed int) bool
	failed int
}

func (s *outageStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	s.mu.Lock()
	down := s.fail != nil && s.fail(ch, s.failed)
	if down {
		s.failed++
	}
	s.mu.Unlock()
	if down {
		return core.Session{}, fmt.Errorf("committing transaction: %w", s.err)
	}
	return s.Store.Commit(ctx, ch)
}

// driverError makes the SQLite driver return a real error: SQLITE_FULL from a file whose
// page count is capped, or SQLITE_CONSTRAINT from a duplicate key.
func driverError(t *testing.T, code sqlite3.ErrNo) error {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`, `INSERT INTO t VALUES (1, x'00')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	switch code {
	case sqlite3.ErrFull:
		if _, err := db.Exec(`PRAGMA max_page_count = 2`); err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(`INSERT INTO t VALUES (2, zeroblob(100000))`)
	case sqlite3.ErrConstraint:
		_, err = db.Exec(`INSERT INTO t VALUES (1, x'01')`)
	}
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("wanted a driver error %v, got %v", code, err)
	}
	return err
}

// waits records the waits the engine asks for between attempts and ends each at once (or
// as next says).
type waits struct {
	mu   sync.Mutex
	got  []time.Duration
	next func(n int) <-chan time.Time // nil: at once
}

func (w *waits) wait(d time.Duration) <-chan time.Time {
	w.mu.Lock()
	w.got = append(w.got, d)
	n, next := len(w.got), w.next
	w.mu.Unlock()
	if next != nil {
		return next(n)
	}
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.got...)
}

// outageEngine is an engine on st (the harness's store, wrapped), echoing, with w's waits.
func outageEngine(h *harness, st core.Store, w *waits) *engine.Engine {
	h.model.Echo("echo: ")
	return h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: st, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, After: w.wait}))
}

// count is how many replies contain s.
func count(rs []core.Reply, s string) int {
	n := 0
	for _, r := range rs {
		if strings.Contains(r.Text, s) {
			n++
		}
	}
	return n
}

// transcriptCount is how many transcript entries of chat have role and content.
func transcriptCount(t *testing.T, st *store.Store, chat string, role core.Role, content string) int {
	t.Helper()
	h, err := st.Transcript(context.Background(), sessionID(chat), 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range h {
		if m.Role == role && m.Content == content {
			n++
		}
	}
	return n
}

// checkHandledOnce checks, from the store and the replies, that the message "hello" (event
// id ev of chat) was answered exactly once after the outage, with one delay notice and no
// "nothing was changed".
func checkHandledOnce(t *testing.T, st *store.Store, out []core.Reply, chat, ev string) {
	t.Helper()
	if n := count(out, engine.DelayNotice); n != 1 {
		t.Errorf("%d delay notices, want 1:\n%s", n, joinTexts(out))
	}
	if n := count(out, "echo: hello"); n != 1 {
		t.Errorf("%d answers, want 1:\n%s", n, joinTexts(out))
	}
	if n := count(out, "nothing was changed"); n != 0 {
		t.Errorf("told that nothing was changed:\n%s", joinTexts(out))
	}
	if n := transcriptCount(t, st, chat, core.RoleUser, "hello"); n != 1 {
		t.Errorf("the message is stored %d times, want 1", n)
	}
	if n := transcriptCount(t, st, chat, core.RoleAssistant, "echo: hello"); n != 1 {
		t.Errorf("the answer is stored %d times, want 1", n)
	}
	if ev != "" {
		seen, err := st.SeenInbound(context.Background(), core.InboundKey{Channel: "terminal", Account: "local", EventID: ev})
		if err != nil || !seen {
			t.Errorf("the event is not recorded as handled: %v %v", seen, err)
		}
	}
	unsent, err := st.UnsentOutbox(context.Background(), []string{"terminal"}, 100)
	if err != nil || len(unsent) != 0 {
		t.Errorf("unsent outbox rows %v (%v), want none", unsent, err)
	}
}

// TestStoreOutageKeepsTheMessage: a message whose commits fail with SQLite's real
// SQLITE_FULL is kept and handled once the store takes writes again, whether the failing
// commit was the message's own (deferred or not) or the answer's after the message was
// stored; the chat is told once that it is delayed and never that nothing changed.
func TestStoreOutageKeepsTheMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      string // "": a message without an event id (no de-duplication)
		replays bool
		fail    func(ch core.Change, failed int) bool
		fails   int
		waits   int // attempts that failed
	}{
		// The turn's commit, then the message's commit on its own: two per attempt.
		{"the message's commit, deferred to the turn's", "ev1", true, func(ch core.Change, failed int) bool { return ch.Inbound != nil && failed < 4 }, 4, 2},
		{"the message's own commit", "ev1", false, func(ch core.Change, failed int) bool { return ch.Inbound != nil && failed < 3 }, 3, 3},
		{"the answer's commit after the message was stored", "ev1", false, answerFails, 1, 1},
		{"the answer's commit after a message without an id was stored", "", false, answerFails, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			st := &outageStore{Store: h.st, err: driverError(t, sqlite3.ErrFull), fail: tc.fail}
			w := &waits{}
			eng := outageEngine(h, st, w)
			m := core.Message{ID: tc.id, Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice"}, Text: "hello", Time: h.clock, Replays: tc.replays}
			if err := eng.Handle(context.Background(), m); err != nil {
				t.Fatalf("handling: %v", err)
			}
			if st.failed != tc.fails {
				t.Fatalf("%d commits failed, want %d", st.failed, tc.fails)
			}
			want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}[:tc.waits]
			if got := w.all(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("waits %v, want %v", got, want)
			}
			checkHandledOnce(t, h.st, h.out.all(), "c", tc.id)
		})
	}
}

// answerFails fails the first commit of the agent's answer (the message was stored before).
func answerFails(ch core.Change, failed int) bool {
	return ch.Inbound == nil && len(ch.Messages) > 0 && ch.Messages[0].Role == core.RoleAssistant && failed < 1
}

// TestStoreOutageWaitIsCapped: the wait between attempts doubles up to 30 s.
func TestStoreOutageWaitIsCapped(t *testing.T) {
	h := newHarness(t)
	st := &outageStore{Store: h.st, err: driverError(t, sqlite3.ErrFull), fail: func(ch core.Change, failed int) bool { return ch.Inbound != nil && failed < 8 }}
	w := &waits{}
	eng := outageEngine(h, st, w)
	m := core.Message{ID: "ev1", Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice"}, Text: "hello", Time: h.clock}
	if err := eng.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	want := "[1s 2s 4s 8s 16s 30s 30s 30s]"
	if got := fmt.Sprint(w.all()); got != want {
		t.Errorf("waits %s, want %s", got, want)
	}
	checkHandledOnce(t, h.st, h.out.all(), "c", "ev1")
}

// TestStoreRefusalIsNotKept: an error that is an answer about the change (a constraint the
// driver reports), and any error of the admin API's operator, keep today's behaviour:
// one "nothing was changed" notice, the error reported, no wait and no delay notice.
func TestStoreRefusalIsNotKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  sqlite3.ErrNo
		admin bool
	}{
		{"a constraint", sqlite3.ErrConstraint, false},
		{"a full disk under the admin API", sqlite3.ErrFull, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			st := &outageStore{Store: h.st, err: driverError(t, tc.code), fail: func(ch core.Change, _ int) bool { return ch.Inbound != nil }}
			w := &waits{}
			eng := outageEngine(h, st, w)
			m := core.Message{ID: "ev1", Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice", Admin: tc.admin}, Text: "hello", Time: h.clock}
			if err := eng.Handle(context.Background(), m); err == nil {
				t.Fatal("handled without error")
			}
			out := h.out.all()
			if n := count(out, "nothing was changed"); n != 1 || count(out, engine.DelayNotice) != 0 || len(w.all()) != 0 || st.failed != 1 {
				t.Errorf("notices %d, waits %v, failed commits %d; replies:\n%s", n, w.all(), st.failed, joinTexts(out))
			}
		})
	}
}

// TestStoreOutageShutdownKeepsTheEvent: a shutdown while the message waits for the store
// ends the job with the context's error (an adapter keeps the event in its inbox for the
// next start: channels.Stopped), and nothing of it was stored.
func TestStoreOutageShutdownKeepsTheEvent(t *testing.T) {
	h := newHarness(t)
	st := &outageStore{Store: h.st, err: driverError(t, sqlite3.ErrFull), fail: func(ch core.Change, _ int) bool { return ch.Inbound != nil }}
	ctx, cancel := context.WithCancel(context.Background())
	w := &waits{next: func(int) <-chan time.Time { cancel(); return nil }}
	eng := outageEngine(h, st, w)
	m := core.Message{ID: "ev1", Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice"}, Text: "hello", Time: h.clock, Replays: true}
	err := <-eng.Enqueue(ctx, m)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("outcome %v, want the context's error", err)
	}
	out := h.out.all()
	if count(out, engine.DelayNotice) != 1 || count(out, "echo:") != 0 || count(out, "nothing was changed") != 0 {
		t.Errorf("replies:\n%s", joinTexts(out))
	}
	seen, err := h.st.SeenInbound(context.Background(), core.InboundKey{Channel: "terminal", Account: "local", EventID: "ev1"})
	if err != nil || seen {
		t.Errorf("the event is recorded (%v, %v) though it was not handled", seen, err)
	}
}

// TestPostgresRestartKeepsTheMessage: with the throwaway PostgreSQL server stopped (its
// connections shut down by the server, new ones refused) a message is kept; once the
// server is back it is answered exactly once, with one delay notice.
func TestPostgresRestartKeepsTheMessage(t *testing.T) {
	srv := pgtest.Own(t)
	h := newHarnessOn(t, store.DriverPostgres, srv.DSN())
	h.say("c", "alice", "warm up") // the pool holds a connection the halt cuts
	again := make(chan time.Time)
	w := &waits{next: func(int) <-chan time.Time { return again }}
	eng := outageEngine(h, h.st, w)
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	n := h.out.count()
	m := core.Message{ID: "ev1", Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice"}, Text: "hello", Time: h.clock, Replays: true}
	done := eng.Enqueue(context.Background(), m)
	deadline := time.After(30 * time.Second)
	for len(w.all()) == 0 {
		select {
		case err := <-done:
			t.Fatalf("handled while the server is down: %v; replies:\n%s", err, joinTexts(h.out.since(n)))
		case <-deadline:
			t.Fatal("the engine never waited for the store")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := srv.Boot(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case again <- time.Time{}:
			continue // one more attempt, while connections come back
		case err := <-done:
			if err != nil {
				t.Fatalf("handling: %v", err)
			}
		}
		break
	}
	checkHandledOnce(t, h.st, h.out.since(n), "c", "ev1")
}

// TestLeaseLostToAStalledStoreKeepsTheMessage: a database that stalls mid-turn (the lease
// renewals fail until the turn is stopped before its lease ends) does not lose the
// message: the turn's stop is not told as the model's failure, the message is kept, and
// once the store answers again the session gets its turn and the message one answer.
func TestLeaseLostToAStalledStoreKeepsTheMessage(t *testing.T) {
	const ttl = 30 * time.Second
	h := newHarness(t, func(c *engine.Config) { c.LeaseTTL = ttl })
	leases := &failingLeases{Store: h.st}
	block, entered := make(chan struct{}), make(chan struct{}, 4)
	h.model.Block(block)
	h.model.Hook(func(core.ModelRequest) { entered <- struct{}{} })
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(block) }) })
	w := &waits{next: func(int) <-chan time.Time {
		leases.fail.Store(false) // the database answers again
		unblock.Do(func() { close(block) })
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}}
	eng := outageEngine(h, leases, w)
	timers := &fakeTimers{}
	engine.SetRenewTimer(eng, timers.after)

	m := core.Message{ID: "ev1", Address: addr("c"), Sender: core.Person{ID: "alice", Name: "alice"}, Text: "hello", Time: h.clock, Replays: true}
	done := eng.Enqueue(context.Background(), m)
	<-entered
	leases.fail.Store(true)
	for range 2 { // the first failure leaves time for a retry, the second does not
		h.clock = h.clock.Add(ttl / 3)
		timers.fireAll(t)
	}
	if err := waitDone(t, done, "the store came back"); err != nil {
		t.Fatalf("handling: %v", err)
	}
	out := h.out.all()
	if len(w.all()) != 1 || count(out, "could not answer") != 0 {
		t.Errorf("waits %v; replies:\n%s", w.all(), joinTexts(out))
	}
	checkHandledOnce(t, h.st, out, "c", "ev1")
}
