package channels

import (
	"errors"
	"fmt"
	"sync"
)

// Health is what an adapter's Ready method reports to serve's /readyz: whether it is
// connected to (or registered at) its platform, and whether storing what it receives
// works: an adapter that cannot store stops confirming what it receives.
type Health struct {
	name string

	mu    sync.Mutex
	up    bool
	down  string // why it is not up
	store error  // the last failed store, nil once one succeeds
}

// NewHealth starts as not connected, with why as the reason.
func NewHealth(name, why string) *Health { return &Health{name: name, down: why} }

// Up notes that the adapter is connected or registered.
func (h *Health) Up() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up, h.down = true, ""
}

// Down notes that it is not, and why (shown on /readyz: no secrets).
func (h *Health) Down(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up, h.down = false, why
}

// Stored notes the outcome of a store, and reports whether the one before it failed: nil
// clears an earlier failure.
func (h *Health) Stored(err error) (wasFailing bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wasFailing, h.store = h.store != nil, err
	return wasFailing
}

// Err is nil when the adapter is up and storing works, else an error naming the problem.
func (h *Health) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	if !h.up {
		why := h.down
		if why == "" {
			why = "not connected"
		}
		errs = append(errs, fmt.Errorf("%s: %s", h.name, why))
	}
	if h.store != nil {
		errs = append(errs, fmt.Errorf("%s: storing received events fails, so none is confirmed to the platform until it works: %w", h.name, h.store))
	}
	return errors.Join(errs...)
}
