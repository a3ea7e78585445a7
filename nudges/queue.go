package nudges

import (
	"container/heap"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/plangate/plangate/core"
)

// item is one schedule in memory.
type item struct {
	n     core.Nudge    // as stored; n.NextFireAt is the occurrence that is due next
	sched cron.Schedule // recurring: the parsed spec, shared; nil for a one-shot
	at    time.Time     // when to look at it: n.NextFireAt, or later after a failed attempt
	index int           // position in the queue; -1 while out of it
	// dropped marks a schedule that SessionChanged let go while a dispatch round held it.
	dropped bool
}

// dueQueue is a min-heap of items by due time (then id, so equal times fire in the order
// they were created).
type dueQueue struct{ h itemHeap }

func (q *dueQueue) grow(n int) {
	if cap(q.h)-len(q.h) < n {
		h := make(itemHeap, len(q.h), len(q.h)+n)
		copy(h, q.h)
		q.h = h
	}
}

func (q *dueQueue) push(it *item)   { heap.Push(&q.h, it) }
func (q *dueQueue) remove(it *item) { heap.Remove(&q.h, it.index) }
func (q *dueQueue) fix(it *item)    { heap.Fix(&q.h, it.index) }

func (q *dueQueue) peek() *item {
	if len(q.h) == 0 {
		return nil
	}
	return q.h[0]
}

// popDue removes and returns every item due at or before now, earliest first.
func (q *dueQueue) popDue(now time.Time) []*item {
	var out []*item
	for len(q.h) > 0 && !q.h[0].at.After(now) {
		out = append(out, heap.Pop(&q.h).(*item))
	}
	return out
}

type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }

func (h itemHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].n.ID < h[j].n.ID
}

func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *itemHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*h = old[:len(old)-1]
	return it
}
