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
// they were created). Its exported methods are container/heap's; use the others.
type dueQueue []*item

func (q *dueQueue) grow(n int) {
	if cap(*q)-len(*q) < n {
		h := make(dueQueue, len(*q), len(*q)+n)
		copy(h, *q)
		*q = h
	}
}

func (q *dueQueue) push(it *item)   { heap.Push(q, it) }
func (q *dueQueue) remove(it *item) { heap.Remove(q, it.index) }
func (q *dueQueue) fix(it *item)    { heap.Fix(q, it.index) }

func (q dueQueue) peek() *item {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// popDue removes and returns every item due at or before now, earliest first.
func (q *dueQueue) popDue(now time.Time) []*item {
	var out []*item
	for len(*q) > 0 && !(*q)[0].at.After(now) {
		out = append(out, heap.Pop(q).(*item))
	}
	return out
}

func (q dueQueue) Len() int { return len(q) }

func (q dueQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].n.ID < q[j].n.ID
}

func (q dueQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

func (q *dueQueue) Push(x any) {
	it := x.(*item)
	it.index = len(*q)
	*q = append(*q, it)
}

func (q *dueQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*q = old[:len(old)-1]
	return it
}
