package telegram

import (
	"errors"
	"fmt"
	"slices"
)

// idRun is update ids received one after another, each one more than the last: first,
// first+1, ..., first+n-1.
type idRun struct{ first, n int64 }

// recentSet is the webhook update ids received lately, in the order they came (oldest
// first), kept as runs of consecutive ids: Telegram numbers updates one by one, so most
// arrivals extend the newest run and the set costs a run, not an entry, per stretch of
// ids. seen answers membership in O(1); adding and evicting are O(1) amortized.
type recentSet struct {
	runs []idRun        // oldest first
	seen map[int64]bool // the ids held
}

func newRecentSet() recentSet { return recentSet{seen: map[int64]bool{}} }

func (r *recentSet) has(id int64) bool { return r.seen[id] }

// size is how many ids are held: the sum of the runs' n.
func (r *recentSet) size() int { return len(r.seen) }

// add appends id, unless it is held already.
func (r *recentSet) add(id int64) {
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	if last := len(r.runs) - 1; last >= 0 && r.runs[last].first+r.runs[last].n == id {
		r.runs[last].n++
		return
	}
	r.runs = append(r.runs, idRun{first: id, n: 1})
}

// evictOldest forgets the id that came first and returns it; the set must not be empty.
func (r *recentSet) evictOldest() int64 {
	old := r.runs[0].first
	r.runs[0].first++
	if r.runs[0].n--; r.runs[0].n == 0 {
		r.runs = r.runs[1:]
	}
	delete(r.seen, old)
	return old
}

// remove forgets id, wherever it is in the order. It is for an update whose save failed,
// one of the newest, so the runs are searched from the newest.
func (r *recentSet) remove(id int64) {
	if !r.seen[id] {
		return
	}
	delete(r.seen, id)
	for i := len(r.runs) - 1; i >= 0; i-- {
		run := r.runs[i]
		if id < run.first || id >= run.first+run.n {
			continue
		}
		// The run splits around id into the parts that are not empty.
		var parts []idRun
		for _, part := range []idRun{{run.first, id - run.first}, {id + 1, run.first + run.n - id - 1}} {
			if part.n > 0 {
				parts = append(parts, part)
			}
		}
		r.runs = slices.Replace(r.runs, i, i+1, parts...)
		return
	}
}

// packRuns is the stored form of runs: a flat list of pairs, start then count, where
// the first start is an update id and each later one is relative to the end (last id +
// 1) of the run before it (512 ids in order are `[1000001,512]`). Webhooks delivered
// concurrently arrive with neighbours swapped, and each swap starts a run: a relative
// start is one or two digits where an id is seven to ten, so such a set stays small too.
func packRuns(runs []idRun) []int64 {
	if len(runs) == 0 {
		return nil
	}
	out := make([]int64, 0, 2*len(runs))
	var end int64
	for i, run := range runs {
		start := run.first
		if i > 0 {
			start -= end
		}
		out = append(out, start, run.n)
		end = run.first + run.n
	}
	return out
}

// errBadRuns is wrapped by every reason unpackRuns refuses a stored list.
var errBadRuns = errors.New("malformed recent update ids")

// unpackRuns lists the ids packRuns stored, oldest first. A list packRuns could not have
// written is refused, not repaired: an odd length, a run of fewer than one id, more ids
// than recentIDs, an id repeated (overlapping runs) or an id past int64's range.
func unpackRuns(packed []int64) ([]int64, error) {
	if len(packed)%2 != 0 {
		return nil, fmt.Errorf("%w: %d numbers, not pairs of start and count", errBadRuns, len(packed))
	}
	ids := make([]int64, 0, min(len(packed), recentIDs))
	seen := make(map[int64]bool, min(len(packed), recentIDs))
	var end int64
	for i := 0; i < len(packed); i += 2 {
		start, n := packed[i], packed[i+1]
		if i > 0 {
			var ok bool
			if start, ok = addInt64(end, start); !ok {
				return nil, fmt.Errorf("%w: run %d starts past the range of ids", errBadRuns, i/2)
			}
		}
		if n < 1 || n > int64(recentIDs-len(ids)) {
			return nil, fmt.Errorf("%w: run %d counts %d ids, with %d already (at most %d in all, at least 1 a run)", errBadRuns, i/2, n, len(ids), recentIDs)
		}
		var ok bool
		if end, ok = addInt64(start, n); !ok {
			return nil, fmt.Errorf("%w: run %d ends past the range of ids", errBadRuns, i/2)
		}
		for id := start; id < end; id++ {
			if seen[id] {
				return nil, fmt.Errorf("%w: update %d appears twice", errBadRuns, id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// addInt64 is a+b, and false when that overflows.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}
