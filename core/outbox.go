package core

import "time"

// Outgoing is one reply in the outbox: committed in the transaction that produced it,
// delivered by a sender afterwards and then marked sent.
type Outgoing struct {
	ID        int64 // assigned by the store
	SessionID string
	Reply     Reply
	CreatedAt time.Time
	Attempts  int // delivery attempts so far
	// Owner is the lease owner id of the engine that committed the row. Until it is gone, its
	// unsent rows are its own to send: another replica's start-up and takeover skip them.
	Owner string
}
