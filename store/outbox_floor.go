package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/plangate/plangate/core"
)

// On SQLite the outbox has no index of unsent rows (migration 0012 dropped outbox_unsent,
// which cost a page in every reply's commit and another in its mark-sent). UnsentOutbox
// scans the table in rowid order from a floor instead, and looks up by id the few rows
// below it that it saw unsent: the held rows. Unsent rows are the few newest (a reply is
// marked sent right after its commit), so after the first scan of a process, which reads
// the whole outbox, a scan reads the rows committed since the last one, plus a key
// lookup of each held row; a reply whose sends keep failing for an hour is one lookup per
// scan, not a scan of everything committed after it.
//
// A floor too high would lose a reply. What this keeps true, per channel c (under mu):
// every row of c with an id below c's floor that may be unsent is in held. Why it holds:
//   - a row never becomes unsent again: a mark or a drop only changes an unsent row, and
//     nothing clears sent_at or dropped. So a held id is removed only when a lookup in the
//     database (not this Store's memory: another process may have marked it) finds the
//     row sent, dropped or pruned, and that stays true; anything else only adds ids;
//   - a new row's id is above every id committed before it, by this process or another
//     sharing the file. SQLite gives a new row max(id)+1 (writers are serialized, each on
//     the newest committed state), and PruneOutbox never deletes the row with the largest
//     id, so the maximum never goes back and an id is never reused; the copy of
//     `plangate store copy` keeps the ids, into an empty outbox (whose floors are at most
//     1, since a once non-empty outbox is never emptied);
//   - so a scan of channels C that reads max(id) = top first, then in one statement looks
//     up the held ids of C below its start (the lowest floor of C) and reads the range
//     from there, sees, for each c in C, every row of c below top+1 that is unsent: those
//     under c's floor were held (the invariant), the others lie in the range, whose rows
//     up to top were all committed before the statement began. So a held id of C it did
//     not list is gone for good, and holding the unsent rows it listed below top+1 (or,
//     when a LIMIT cut the list, below the last row listed +1; the same bound for what is
//     gone) it may raise c's floor to there: any row committed later has a larger id;
//   - the floor is kept per channel: a scan for some channels says nothing about the
//     others, whose rows another caller may list. A scan of all channels (nil) proves the
//     floor of all of them at once;
//   - held is bounded (maxHeld): when it is full, a floor stops at the first unsent row
//     it could not hold, which the range of the next scan reads again.
//
// Floors are only raised, each by a proof of its own in the same critical section that
// holds the rows it passes, so concurrent scans need no more than the mutex: a row one
// scan saw unsent and another removed was found gone by the other, for good. A new Store
// (a restart) starts from 0 with nothing held.
type unsentFloors struct {
	mu   sync.Mutex
	all  int64            // below this id only held rows may be unsent
	of   map[string]int64 // below this id only held rows of the channel may be unsent
	held map[int64]string // ids seen unsent below their channel's floor, and their channel
	hold int              // the most rows held; 0: maxHeld (tests set fewer)
	// between, in tests, runs between a list's read of max(id) and its lookups and scan,
	// where another process may commit, mark or drop.
	between func()
}

// maxHeld bounds the held rows: each is looked up in every scan of its channel, in one
// statement with a parameter per id (SQLite allows 32,766). In a long outage most rows
// are unsent and the scan from the floor returns them anyway.
const maxHeld = 500

// floor is channel c's floor; f.mu must be held.
func (f *unsentFloors) floor(c string) int64 { return max(f.all, f.of[c]) }

// from is the id a scan of channels (nil: all) starts at, and the held ids it looks up.
func (f *unsentFloors) from(channels []string) (int64, []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var held []int64
	for id, c := range f.held {
		if len(channels) == 0 || slices.Contains(channels, c) {
			held = append(held, id)
		}
	}
	slices.Sort(held)
	if len(channels) == 0 {
		return f.all, held
	}
	lo := int64(math.MaxInt64)
	for _, c := range channels {
		lo = min(lo, f.floor(c))
	}
	return lo, held
}

// learn records what a scan of channels (nil: all) found: gone, the held ids it found
// no longer unsent; seen, every unsent row of those channels below bound
// (oldest first, chans their channels; rows at or above bound are ignored).
func (f *unsentFloors) learn(channels []string, gone []int64, seen []core.Outgoing, chans []string, bound int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.of == nil {
		f.of, f.held = map[string]int64{}, map[int64]string{}
	}
	for _, id := range gone {
		delete(f.held, id)
	}
	// stop: the channels whose floor stops at a row held could not take.
	stop := map[string]int64{}
	for i, o := range seen {
		c := chans[i]
		if o.ID >= bound {
			break
		}
		if _, stopped := stop[c]; stopped || o.ID < f.floor(c) {
			continue // below the floor already: held, or found gone by another scan
		}
		if len(f.held) >= cmp.Or(f.hold, maxHeld) {
			if len(channels) == 0 {
				bound = o.ID // the common floor stops here, for every channel
				break
			}
			stop[c] = o.ID
			continue
		}
		f.held[o.ID] = c
	}
	if len(channels) == 0 {
		f.all = max(f.all, bound)
		return
	}
	for _, c := range channels {
		to, stopped := stop[c]
		if !stopped {
			to = bound
		}
		f.of[c] = max(f.of[c], to)
	}
}

// unsentFromFloor is UnsentOutbox on SQLite: in one statement, the held rows below the
// floor by id and a rowid range scan from it.
func (s *Store) unsentFromFloor(ctx context.Context, channels []string, limit int) ([]core.Outgoing, error) {
	from, held := s.floors.from(channels)
	// top first: a row committed after it has a larger id, whether or not the scan sees it.
	var top int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&top); err != nil {
		return nil, fmt.Errorf("listing unsent replies: %w", err)
	}
	if s.floors.between != nil {
		s.floors.between()
	}
	// Held rows at or above from are in the range.
	below := held[:0:0]
	for _, id := range held {
		if id < from {
			below = append(below, id)
		}
	}
	q, args := unsentQuery(channels, limit, &from, below)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing unsent replies: %w", err)
	}
	var chans []string
	out, err := scanOutbox(rows, "unsent", &chans)
	if err != nil {
		return nil, err
	}
	// The list has every unsent row of channels that was held or lies in the range, up to
	// bound; a held row below it not listed is gone for good.
	bound := top + 1
	if limit > 0 && len(out) == limit {
		bound = out[len(out)-1].ID + 1
	}
	var gone []int64
	for _, id := range held {
		if _, found := slices.BinarySearchFunc(out, id, func(o core.Outgoing, id int64) int { return cmp.Compare(o.ID, id) }); !found && id < bound {
			gone = append(gone, id)
		}
	}
	s.floors.learn(channels, gone, out, chans, bound)
	return out, nil
}

// unsentQuery is UnsentOutbox's query. With from (SQLite) it also selects the channel,
// starts at that id and adds the rows held (ids below from, of channels) by key, the
// two arms merged in id order; without, it is PostgreSQL's, which reads outbox_unsent.
func unsentQuery(channels []string, limit int, from *int64, held []int64) (string, []any) {
	cols := `id, session_id, reply, created_at, attempts, owner`
	args := make([]any, 0, len(held)+len(channels)+2)
	q, where := ``, ``
	if from != nil {
		cols += `, channel`
		if len(held) > 0 {
			q = `SELECT ` + cols + ` FROM outbox WHERE id IN (?` + strings.Repeat(`, ?`, len(held)-1) + `) AND sent_at IS NULL AND dropped = '' UNION ALL `
			for _, id := range held {
				args = append(args, id)
			}
		}
		where = ` AND id >= ?`
		args = append(args, *from)
	}
	q += `SELECT ` + cols + ` FROM outbox WHERE sent_at IS NULL AND dropped = ''` + where
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
