// Package channeltest helps test code that talks to chat channels: Fake is an in-memory
// channel that records what is sent and lets a test deliver inbound messages, and
// RunConformance is the behaviour every channel adapter must show, run against the adapter
// wired to a local fake of its platform.
package channeltest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Edit is one recorded Editor.Edit call.
type Edit struct {
	ID    string
	Reply core.Reply
}

// Fake is an in-memory channel. It is safe for concurrent use.
type Fake struct {
	name string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever the state below changes
	handler  channels.Handler
	replies  []core.Reply
	edits    []Edit
	ids      int
	sent     map[string]bool // ids returned by Send, for Edit
	sendErr  error
	editErr  error
	runCount int
}

var (
	_ channels.Channel = (*Fake)(nil)
	_ channels.Editor  = (*Fake)(nil)
)

// NewFake returns a fake channel with the given name ("fake" if empty).
func NewFake(name string) *Fake {
	if name == "" {
		name = "fake"
	}
	return &Fake{name: name, changed: make(chan struct{}), sent: make(map[string]bool)}
}

// Name implements channels.Channel.
func (f *Fake) Name() string { return f.name }

// Run makes h the target of Deliver and blocks until ctx ends; it returns nil then, as a
// channel whose context ends does.
func (f *Fake) Run(ctx context.Context, h channels.Handler) error {
	f.mu.Lock()
	f.handler = h
	f.runCount++
	f.notifyLocked()
	f.mu.Unlock()

	<-ctx.Done()

	f.mu.Lock()
	if f.runCount--; f.runCount == 0 {
		f.handler = nil
	}
	f.notifyLocked()
	f.mu.Unlock()
	return nil
}

// ErrNotRunning is what Deliver reports when Run did not start before its context ended,
// as distinct from an error of the Handler.
var ErrNotRunning = errors.New("channel not running")

// Deliver hands m to the Handler of the running Run, waiting for Run to start if it has not
// yet, and returns the Handler's error. Like a real adapter, it fills in the channel name.
func (f *Fake) Deliver(ctx context.Context, m core.Message) error {
	if m.Address.Channel == "" {
		m.Address.Channel = f.name
	}
	for {
		f.mu.Lock()
		h, changed := f.handler, f.changed
		f.mu.Unlock()
		if h != nil {
			return channels.Handle(ctx, h, m)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("delivering to %s: %w (%w)", f.name, ErrNotRunning, ctx.Err())
		}
	}
}

// Send implements channels.Channel: it records r and returns "<name>-1", "<name>-2", ...
func (f *Fake) Send(ctx context.Context, r core.Reply) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return "", f.sendErr
	}
	f.ids++
	id := f.name + "-" + strconv.Itoa(f.ids)
	f.sent[id] = true
	f.replies = append(f.replies, r)
	f.notifyLocked()
	return id, nil
}

// EditsInPlace implements channels.Drafter.
func (f *Fake) EditsInPlace() {}

// Edit implements channels.Editor: it records the edit. Ids the fake never returned are an
// error, as a platform answers for an unknown message.
func (f *Fake) Edit(ctx context.Context, id string, r core.Reply) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.editErr != nil {
		return f.editErr
	}
	if !f.sent[id] {
		return fmt.Errorf("editing %q: %w", id, errUnknownMessage)
	}
	f.edits = append(f.edits, Edit{ID: id, Reply: r})
	f.notifyLocked()
	return nil
}

var errUnknownMessage = errors.New("no such message")

// FailSend makes every following Send fail with err (nil restores success).
func (f *Fake) FailSend(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sendErr = err
}

// FailEdit makes every following Edit fail with err (nil restores success).
func (f *Fake) FailEdit(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.editErr = err
}

// Replies returns a copy of the replies sent so far, oldest first.
func (f *Fake) Replies() []core.Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.Reply(nil), f.replies...)
}

// Edits returns a copy of the edits made so far, oldest first.
func (f *Fake) Edits() []Edit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Edit(nil), f.edits...)
}

// WaitFor waits until at least n replies have been sent and returns them all; it fails
// when ctx ends first, saying how many arrived.
func (f *Fake) WaitFor(ctx context.Context, n int) ([]core.Reply, error) {
	for {
		f.mu.Lock()
		got, changed := len(f.replies), f.changed
		if got >= n {
			out := append([]core.Reply(nil), f.replies...)
			f.mu.Unlock()
			return out, nil
		}
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return f.Replies(), fmt.Errorf("waiting for %d replies on %s, got %d: %w", n, f.name, got, ctx.Err())
		}
	}
}

// notifyLocked wakes every waiter; f.mu must be held.
func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// MemState is an in-memory channels.State, for adapters tested without a store.
type MemState struct {
	mu    sync.Mutex
	m     map[string]string
	order sync.Mutex // snapshot saves, one at a time so they land in order
}

// ChannelState implements channels.State.
func (s *MemState) ChannelState(_ context.Context, ch, acc, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[ch+"/"+acc+"/"+key]
	return v, ok, nil
}

// SetChannelState implements channels.State.
func (s *MemState) SetChannelState(_ context.Context, ch, acc, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[ch+"/"+acc+"/"+key] = value
	return nil
}

// SetChannelStateLazy implements channels.State: memory has no disk to wait for.
func (s *MemState) SetChannelStateLazy(ctx context.Context, ch, acc, key, value string) error {
	return s.SetChannelState(ctx, ch, acc, key, value)
}

// SetChannelStateWith implements channels.State.
func (s *MemState) SetChannelStateWith(ctx context.Context, ch, acc, key string, _ bool, value func() (string, error)) error {
	s.order.Lock()
	defer s.order.Unlock()
	v, err := value()
	if err != nil {
		return err
	}
	return s.SetChannelState(ctx, ch, acc, key, v)
}
