package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// typingOut is a Sender with a typing indicator that counts the indicators per chat.
type typingOut struct {
	mu    sync.Mutex
	shown map[string]int
	sent  chan core.Address
}

func (o *typingOut) Send(context.Context, core.Reply) (string, error) { return "1", nil }

func (o *typingOut) Typing(_ context.Context, a core.Address) error {
	o.mu.Lock()
	o.shown[a.Chat]++
	o.mu.Unlock()
	if o.sent != nil {
		o.sent <- a
	}
	return nil
}

func (o *typingOut) count(chat string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.shown[chat]
}

// scheduled is a fake time.AfterFunc: the test fires the indicator itself.
type scheduled struct {
	delays []time.Duration
	fns    []func()
}

func (s *scheduled) after(d time.Duration, f func()) func() bool {
	s.delays = append(s.delays, d)
	s.fns = append(s.fns, f)
	return func() bool { return true }
}

func (s *scheduled) fireLast(t *testing.T) {
	t.Helper()
	if len(s.fns) == 0 {
		t.Fatal("no indicator was scheduled")
	}
	s.fns[len(s.fns)-1]()
}

// The typing indicator runs in the background after the delay, at most once per window
// per chat (on the engine's clock), and is not sent when the answer came first.
func TestTypingIsSentOncePerWindowAndNotAfterTheAnswer(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := &typingOut{shown: map[string]int{}}
	e := NewEngine(Config{TypingDelay: DefaultTypingDelay}, Deps{Out: out, Now: func() time.Time { return now }})
	sch := &scheduled{}
	e.typer.after = sch.after
	ctx := context.Background()
	a, b := core.Address{Channel: "telegram", Account: "1", Chat: "a"}, core.Address{Channel: "telegram", Account: "1", Chat: "b"}

	// A slow model call: the indicator fires after the delay, off the call's path.
	stop := e.typingSoon(ctx, a)
	if len(sch.fns) != 1 || sch.delays[0] != DefaultTypingDelay {
		t.Fatalf("scheduled %v, want one indicator after %v", sch.delays, DefaultTypingDelay)
	}
	if out.count("a") != 0 {
		t.Fatal("the indicator was sent before its delay")
	}
	sch.fireLast(t)
	stop()
	if got := out.count("a"); got != 1 {
		t.Fatalf("%d indicators, want 1", got)
	}

	// Within the window the next calls of the chat schedule nothing; another chat does.
	now = now.Add(typingEvery - time.Second)
	e.typingSoon(ctx, a)()
	if len(sch.fns) != 1 {
		t.Errorf("a call %v after the indicator scheduled another", typingEvery-time.Second)
	}
	e.typingSoon(ctx, b)
	sch.fireLast(t)
	if out.count("b") != 1 || out.count("a") != 1 {
		t.Errorf("indicators a=%d b=%d, want 1 each", out.count("a"), out.count("b"))
	}

	// After the window: scheduled again, but the answer comes first, so nothing is sent,
	// and the chat is still due for the next call.
	now = now.Add(2 * time.Second)
	stop = e.typingSoon(ctx, a)
	stop()
	sch.fireLast(t) // a timer that fired as it was stopped
	if got := out.count("a"); got != 1 {
		t.Errorf("%d indicators after an answer that came first, want still 1", got)
	}
	stop = e.typingSoon(ctx, a)
	if len(sch.fns) != 4 {
		t.Fatalf("%d scheduled, want the skipped indicator to leave the chat due", len(sch.fns))
	}
	sch.fireLast(t)
	stop()
	if got := out.count("a"); got != 2 {
		t.Errorf("%d indicators, want 2", got)
	}
}

// Two indicators scheduled for one chat before either fired send one: the second finds
// the window taken.
func TestTypingRaceSendsOnce(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := &typingOut{shown: map[string]int{}}
	e := NewEngine(Config{TypingDelay: time.Second}, Deps{Out: out, Now: func() time.Time { return now }})
	sch := &scheduled{}
	e.typer.after = sch.after
	a := core.Address{Channel: "telegram", Account: "1", Chat: "a"}
	e.typingSoon(context.Background(), a)
	e.typingSoon(context.Background(), a)
	for _, f := range sch.fns {
		f()
	}
	if len(sch.fns) != 2 || out.count("a") != 1 {
		t.Errorf("%d scheduled, %d sent; want 2 scheduled and 1 sent", len(sch.fns), out.count("a"))
	}
}

// Without a delay the indicator is sent for every call outside the window, in the
// background.
func TestTypingWithoutDelay(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := &typingOut{shown: map[string]int{}, sent: make(chan core.Address, 4)}
	e := NewEngine(Config{}, Deps{Out: out, Now: func() time.Time { return now }})
	a := core.Address{Channel: "telegram", Account: "1", Chat: "a"}
	e.typingSoon(context.Background(), a)() // stopped at once: sent all the same
	if got := <-out.sent; got != a {
		t.Errorf("indicator for %+v, want %+v", got, a)
	}
	e.typingSoon(context.Background(), a)()
	if got := out.count("a"); got != 1 {
		t.Errorf("%d indicators within the window, want 1", got)
	}
}
