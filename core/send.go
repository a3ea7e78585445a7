package core

import (
	"errors"
	"time"
)

// What a Sender's error says about sending the reply again. The adapters' transport
// (channels.Policy) marks its final errors with these, and the engine's outbox branches
// on them: a refused reply is given up at once, a rate-limited one waits as asked.

// ErrRefused marks a send the platform refused for good: sending the same reply again
// changes nothing (a chat that is gone, a message the platform will not take).
var ErrRefused = errors.New("refused by the platform")

// SendDelay returns the wait a send error asks for before the next attempt (a platform's
// Retry-After), or 0 when it asks for none.
func SendDelay(err error) time.Duration {
	var w interface{ Delay() time.Duration }
	if errors.As(err, &w) {
		return max(w.Delay(), 0)
	}
	return 0
}
