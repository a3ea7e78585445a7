package channeltest

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"

	"github.com/plangate/plangate/core"
)

// Replies lists the replies the engine committed for session (its outbox rows), oldest
// first, so a test can assert on the kind of reply a message got (a notice, a plan), not
// only on how the platform shows it.
func (e *Env[C]) Replies(session string) []core.Reply {
	e.TB.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(e.Dir, "plangate.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		e.TB.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT reply FROM outbox WHERE session_id = ? ORDER BY id`, session)
	if err != nil {
		e.TB.Fatalf("reading the outbox: %v", err)
	}
	defer rows.Close()
	var out []core.Reply
	for rows.Next() {
		var raw string
		var r core.Reply
		if err := rows.Scan(&raw); err != nil {
			e.TB.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			e.TB.Fatalf("decoding an outbox reply: %v", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		e.TB.Fatal(err)
	}
	return out
}

// Plans lists the session's plan versions as stored.
func (e *Env[C]) Plans(session string) []core.Plan {
	e.TB.Helper()
	ps, err := e.Store.Plans(context.Background(), session)
	if err != nil {
		e.TB.Fatal(err)
	}
	return ps
}

// Events lists the kinds of the session's audit rows, oldest first.
func (e *Env[C]) Events(session string) []core.EventKind {
	e.TB.Helper()
	evs, err := e.Store.Events(context.Background(), session)
	if err != nil {
		e.TB.Fatal(err)
	}
	out := make([]core.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}
