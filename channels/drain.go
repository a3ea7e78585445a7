package channels

import "context"

// Drainer is implemented by channels whose received events outlive Run: they are handed
// to an AsyncHandler, and a shutdown lets the turns in flight finish before each event is
// settled. Drain waits for that (until ctx ends) and reports how many events were left
// unhandled — the handler stopped before it committed them — and are kept for the next
// start. Call it after Run has returned and the handler has stopped, before the store
// closes.
type Drainer interface {
	Drain(ctx context.Context) (left int, err error)
}
