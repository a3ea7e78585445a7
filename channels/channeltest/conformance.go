package channeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// wait bounds every wait of the conformance suite; a local fake answers far sooner.
const wait = 5 * time.Second

// Harness is an adapter under test together with the test's side of its platform, usually
// an httptest fake of the platform API that the adapter's client is pointed at.
type Harness struct {
	// Channel is the adapter, not yet running.
	Channel channels.Channel
	// Address is the conversation the suite talks in; inbound messages must carry it
	// exactly, and replies are sent to it.
	Address core.Address
	// Inject makes the platform deliver a plain text message from the user with platform
	// id sender to Address, as a person typing it would.
	Inject func(ctx context.Context, sender, text string) error
	// Shown returns what the platform has received for Address, oldest first, edits
	// included; the suite looks for its texts in it.
	Shown func() []string
	// Sender is a valid platform user id for Inject (Telegram's are numbers); "" = "u100".
	// Inbound messages must carry it as Sender.ID.
	Sender string
}

func (h Harness) sender() string {
	if h.Sender == "" {
		return "u100"
	}
	return h.Sender
}

// RunConformance checks the behaviour every channel adapter must show: inbound messages
// arrive normalized and in order, a failing Handler does not stop the channel, Send returns
// distinct ids for messages the platform shows, Edit (when implemented) changes what is
// shown, and Run returns nil soon after its context ends. newHarness is called once per
// sub-test, so each starts from a fresh platform.
func RunConformance(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	t.Run("inbound messages in order", func(t *testing.T) { inboundInOrder(t, newHarness(t)) })

	t.Run("handler error does not stop the channel", func(t *testing.T) {
		h := newHarness(t)
		rec, _ := start(t, h, errors.New("engine failed"))
		inject(t, h, h.sender(), "fails")
		inject(t, h, h.sender(), "still heard")
		got := rec.waitFor(t, 2)
		if got[1].Text != "still heard" {
			t.Fatalf("second message %q, want %q", got[1].Text, "still heard")
		}
	})

	t.Run("send returns distinct ids", func(t *testing.T) {
		h := newHarness(t)
		start(t, h, nil)
		ctx := testContext(t)
		ids := map[string]bool{}
		for _, text := range []string{"reply alpha", "reply beta"} {
			id, err := h.Channel.Send(ctx, core.Reply{To: h.Address, Text: text})
			if err != nil {
				t.Fatalf("sending %q: %v", text, err)
			}
			if id == "" || ids[id] {
				t.Fatalf("sending %q: id %q is empty or repeated", text, id)
			}
			ids[id] = true
			waitShown(t, h, text)
		}
	})

	t.Run("edit changes the shown message", func(t *testing.T) {
		h := newHarness(t)
		ed, ok := h.Channel.(channels.Editor)
		if !ok {
			t.Skipf("%s does not implement channels.Editor", h.Channel.Name())
		}
		start(t, h, nil)
		ctx := testContext(t)
		id, err := h.Channel.Send(ctx, core.Reply{To: h.Address, Kind: core.ReplyProgress, Text: "step one running"})
		if err != nil {
			t.Fatal(err)
		}
		if err := ed.Edit(ctx, id, core.Reply{To: h.Address, Kind: core.ReplyProgress, Text: "step one done"}); err != nil {
			t.Fatalf("editing %q: %v", id, err)
		}
		waitShown(t, h, "step one done")
	})

	t.Run("run stops when its context ends", func(t *testing.T) {
		h := newHarness(t)
		_, stop := start(t, h, nil)
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v after its context ended, want nil", err)
		}
	})
}

// inboundInOrder injects messages and checks they arrive normalized and in order.
func inboundInOrder(t *testing.T, h Harness) {
	rec, _ := start(t, h, nil)
	texts := []string{"first message", "second message", "/plan status"}
	for _, text := range texts {
		inject(t, h, h.sender(), text)
	}
	got := rec.waitFor(t, len(texts))
	for i, m := range got {
		if m.Text != texts[i] {
			t.Errorf("message %d: text %q, want %q", i+1, m.Text, texts[i])
		}
		if m.Address != h.Address {
			t.Errorf("message %d: address %+v, want %+v", i+1, m.Address, h.Address)
		}
		if m.Address.Channel != h.Channel.Name() {
			t.Errorf("message %d: address channel %q, want the channel name %q", i+1, m.Address.Channel, h.Channel.Name())
		}
		if m.Sender.ID != h.sender() {
			t.Errorf("message %d: sender id %q, want %s", i+1, m.Sender.ID, h.sender())
		}
		if m.Time.IsZero() {
			t.Errorf("message %d: no time", i+1)
		}
	}
}

// recorder is the suite's Handler.
type recorder struct {
	fail error // returned for the first message only

	mu      sync.Mutex
	msgs    []core.Message
	changed chan struct{}
}

// EnqueueThen records m and reports its outcome at once.
func (r *recorder) EnqueueThen(_ context.Context, m core.Message, then func(error)) {
	then(r.record(m))
}

func (r *recorder) record(m core.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	close(r.changed)
	r.changed = make(chan struct{})
	if len(r.msgs) == 1 {
		return r.fail
	}
	return nil
}

func (r *recorder) waitFor(t *testing.T, n int) []core.Message {
	t.Helper()
	timeout := time.After(wait)
	for {
		r.mu.Lock()
		msgs, changed := slices.Clone(r.msgs), r.changed
		r.mu.Unlock()
		if len(msgs) >= n {
			return msgs
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("handler got %d messages in %v, want %d", len(msgs), wait, n)
		}
	}
}

// start runs the channel until the test ends; stop cancels it and returns Run's error,
// failing the test if Run does not return in time.
func start(t *testing.T, h Harness, fail error) (*recorder, func() error) {
	t.Helper()
	rec := &recorder{fail: fail, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Channel.Run(ctx, rec) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(wait):
				runErr = fmt.Errorf("%s: Run did not return within %v of its context ending", h.Channel.Name(), wait)
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	return rec, stop
}

func inject(t *testing.T, h Harness, sender, text string) {
	t.Helper()
	if err := h.Inject(testContext(t), sender, text); err != nil {
		t.Fatalf("injecting %q: %v", text, err)
	}
}

func waitShown(t *testing.T, h Harness, text string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		shown := h.Shown()
		if slices.ContainsFunc(shown, func(s string) bool { return strings.Contains(s, text) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("platform never showed %q; it showed %q", text, shown)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}
