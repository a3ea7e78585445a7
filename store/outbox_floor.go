package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/plangate/plangate/core"
)

// On SQLite the outbox has no index of unsent rows (migration 0012 dropped outbox_unsent,
// which cost a page in every reply's commit and another in its mark-sent). UnsentOutbox
// scans the table in rowid order from a floor instead: an id below which this Store has
// seen no unsent row. Unsent rows are the few newest (a reply is marked sent right after
// its commit), so after the first scan of a process, which reads the whole outbox, a scan
// reads the rows from the oldest one not yet seen sent to the end.
//
// A floor too high would lose a reply, so what makes it sound:
//   - a row never becomes unsent again: a mark or a drop only changes an unsent row, and
//     nothing clears sent_at or dropped;
//   - a new row's id is above every id committed before it, by this process or another
//     sharing the file. SQLite gives a new row max(id)+1 (writers are serialized, each on
//     the newest committed state), and PruneOutbox never deletes the row with the largest
//     id, so the maximum never goes back and an id is never reused; the copy of
//     `plangate store copy` keeps the ids, into an empty outbox;
//   - so a scan that read max(id) = top before it started, and found no unsent row of a
//     channel between its floor and top, proves none below top+1 for good: any row
//     committed later has a larger id. With a LIMIT that cut the list, the proof ends at
//     the last row listed;
//   - the floor is kept per channel: a scan for some channels says nothing about the
//     others, whose rows another caller may list. A scan of all channels (nil) proves the
//     floor of all of them at once.
//
// Floors are only raised, each by a proof of its own, so concurrent scans need no more
// than the mutex. A new Store (a restart) starts from 0.
type unsentFloors struct {
	mu  sync.Mutex
	all int64            // no row below this id is unsent
	of  map[string]int64 // no row of the channel below this id is unsent
	// between, in tests, runs between a list's read of max(id) and its scan, where
	// another process may commit.
	between func()
}

// from is the id a scan of channels (nil: all) starts at.
func (f *unsentFloors) from(channels []string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(channels) == 0 {
		return f.all
	}
	lo := int64(math.MaxInt64)
	for _, c := range channels {
		lo = min(lo, max(f.all, f.of[c]))
	}
	return lo
}

// learn raises the floors of channels (nil: all) from a scan that listed rows (oldest
// first, chans their channels) and saw every unsent row of those channels from its start
// up to bound (excluded).
func (f *unsentFloors) learn(channels []string, rows []core.Outgoing, chans []string, bound int64) {
	first := make(map[string]int64, len(channels))
	for i, c := range chans {
		if _, ok := first[c]; !ok {
			first[c] = rows[i].ID
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.of == nil {
		f.of = map[string]int64{}
	}
	raise := func(c string) {
		to, ok := first[c]
		if !ok {
			to = bound
		}
		f.of[c] = max(f.of[c], to)
	}
	if len(channels) > 0 {
		for _, c := range channels {
			raise(c)
		}
		return
	}
	all := bound
	if len(rows) > 0 {
		all = rows[0].ID
	}
	f.all = max(f.all, all)
	for c := range f.of {
		raise(c)
	}
	for c := range first {
		raise(c)
	}
}

// unsentFromFloor is UnsentOutbox on SQLite: a rowid range scan from the floor.
func (s *Store) unsentFromFloor(ctx context.Context, channels []string, limit int) ([]core.Outgoing, error) {
	from := s.floors.from(channels)
	// top first: a row committed after it has a larger id, whether or not the scan sees it.
	var top int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&top); err != nil {
		return nil, fmt.Errorf("listing unsent replies: %w", err)
	}
	if s.floors.between != nil {
		s.floors.between()
	}
	q, args := unsentQuery(channels, limit, &from)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing unsent replies: %w", err)
	}
	var chans []string
	out, err := scanOutbox(rows, "unsent", &chans)
	if err != nil {
		return nil, err
	}
	bound := top + 1
	if limit > 0 && len(out) == limit {
		bound = out[len(out)-1].ID + 1
	}
	s.floors.learn(channels, out, chans, bound)
	return out, nil
}

// unsentQuery is UnsentOutbox's query. With from (SQLite) it also selects the channel
// and starts at that id; without, it is PostgreSQL's, which reads outbox_unsent.
func unsentQuery(channels []string, limit int, from *int64) (string, []any) {
	cols := `id, session_id, reply, created_at, attempts, owner`
	args := make([]any, 0, len(channels)+2)
	where := ``
	if from != nil {
		cols += `, channel`
		where = ` AND id >= ?`
		args = append(args, *from)
	}
	q := `SELECT ` + cols + ` FROM outbox WHERE sent_at IS NULL AND dropped = ''` + where
	if len(channels) > 0 {
		q += ` AND channel IN (?` + strings.Repeat(`, ?`, len(channels)-1) + `)`
		for _, c := range channels {
			args = append(args, c)
		}
	}
	q += ` ORDER BY id`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	return q, args
}
