package slack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// fullStore is the real store whose Commits that record an inbound event fail with the
// SQLITE_FULL the driver returns while full is set: a disk that filled after the event
// was acknowledged.
type fullStore struct {
	*store.Store
	err  error
	full atomic.Bool
}

func (s *fullStore) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	if s.full.Load() && ch.Inbound != nil {
		return core.Session{}, fmt.Errorf("committing transaction: %w", s.err)
	}
	return s.Store.Commit(ctx, ch)
}

// sqliteFull is a real SQLITE_FULL from the driver: an insert into a file whose page
// count is capped.
func sqliteFull(t *testing.T) error {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`CREATE TABLE t (v BLOB)`, `PRAGMA max_page_count = 2`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.Exec(`INSERT INTO t VALUES (zeroblob(100000))`)
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("wanted SQLITE_FULL, got %v", err)
	}
	return err
}

// An event acknowledged (200) just before the store filled stays in the inbox while the
// engine cannot commit it; the chat is told once that it is delayed; once the store takes
// writes again it is answered exactly once and only then leaves the inbox; no reply says
// that nothing was changed.
func TestHTTPEventKeptThroughAFullStore(t *testing.T) {
	st := &fullStore{err: sqliteFull(t)}
	st.full.Store(true)
	var mu sync.Mutex
	var waits []chan time.Time
	e := newEnv(t, httpMode, func(e *env) {
		e.EngineStore = func(s *store.Store) core.Store { st.Store = s; return st }
		e.After = func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			mu.Lock()
			waits = append(waits, ch)
			mu.Unlock()
			return ch
		}
	})
	attempts := func() int { mu.Lock(); defer mu.Unlock(); return len(waits) }
	retry := func() { mu.Lock(); defer mu.Unlock(); waits[len(waits)-1] <- time.Time{} }

	ts := e.api.userTS()
	inner := map[string]any{"type": "app_mention", "user": alice, "text": "<@UBOT> hello", "ts": ts, "channel": general, "event_ts": ts}
	e.api.waitAck(e.api.resend("EvKEPT", inner, 0))
	key := messageKey(general, ts)
	pending := func() bool {
		for _, p := range e.Channel.disp.Load().in.Pending() {
			if p.Key == key {
				return true
			}
		}
		return false
	}

	e.Eventually("the engine waiting for the store", func() bool { return attempts() == 1 })
	retry() // still full: a second attempt, a second wait
	e.Eventually("a second wait", func() bool { return attempts() == 2 })
	e.api.waitText(general, "reach my database")
	saved, ok, err := e.Store.ChannelState(context.Background(), Name, e.api.team, "inbox")
	if err != nil || !ok || !strings.Contains(saved, ts) || !pending() {
		t.Fatalf("during the outage the event is not in the inbox: saved %q (%v, %v), pending %v", saved, ok, err, pending())
	}
	for _, m := range e.api.messages(general) {
		if m.shown() == "ok" {
			t.Error("an answer went out while its turn could not be stored")
		}
	}

	st.full.Store(false)
	retry()
	e.api.waitText(general, "ok")
	e.Idle()
	if pending() {
		t.Error("the handled event is still in the inbox")
	}
	seen, err := e.Store.SeenInbound(context.Background(), core.InboundKey{Channel: Name, Account: e.api.team, EventID: key})
	if err != nil || !seen {
		t.Errorf("the event is not recorded as handled: %v, %v", seen, err)
	}
	var notices, answers int
	for _, m := range e.api.messages(general) {
		switch s := m.shown(); {
		case strings.Contains(s, "nothing was changed"):
			t.Errorf("told that nothing was changed: %q", s)
		case strings.Contains(s, "reach my database"):
			notices++
		case s == "ok":
			answers++
		}
	}
	if notices != 1 || answers != 1 || attempts() != 2 {
		t.Errorf("%d delay notices, %d answers, %d waits; want 1, 1, 2; messages: %+v", notices, answers, attempts(), e.api.messages(general))
	}
}
