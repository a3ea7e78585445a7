package channels

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := NewPacer(func(chat int) Rate {
		if chat < 0 {
			return Rate{Every: 3 * time.Second, Burst: 2}
		}
		return Rate{Every: time.Second, Burst: 2}
	}, Rate{})
	p.Now = func() time.Time { return now }
	waits := func(chat, n int) []time.Duration {
		var out []time.Duration
		for range n {
			out = append(out, p.Reserve(chat))
		}
		return out
	}
	if got := waits(1, 4); got[0] != 0 || got[1] != 0 || got[2] != time.Second || got[3] != 2*time.Second {
		t.Errorf("chat 1 waits %v, want 0 0 1s 2s", got)
	}
	if got := waits(-1, 3); got[2] != 3*time.Second {
		t.Errorf("a chat with its own rate waits %v, want the third after 3s", got)
	}
	if got := p.Reserve(0); got != 0 {
		t.Errorf("no chat waits %v", got)
	}
	p.Block(2, 5*time.Second)
	if got := p.Reserve(2); got != 5*time.Second {
		t.Errorf("after a block of 5s the chat waits %v", got)
	}
	now = now.Add(time.Minute)
	if got := waits(1, 2); got[0] != 0 || got[1] != 0 {
		t.Errorf("after a quiet minute waits %v, want a fresh burst", got)
	}
}

func TestPacerGlobal(t *testing.T) {
	now := time.Unix(1000, 0)
	p := NewPacer[string](nil, Rate{Every: time.Second, Burst: 2})
	p.Now = func() time.Time { return now }
	got := []time.Duration{p.Reserve("a"), p.Reserve("b"), p.Reserve(""), p.Reserve("c")}
	if got[0] != 0 || got[1] != 0 || got[2] != time.Second || got[3] != 2*time.Second {
		t.Errorf("waits %v, want 0 0 1s 2s across all chats", got)
	}
}

// TestPacerConcurrent books from many goroutines at once (run with -race): every booking
// counts, so the waits handed out are exactly the GCRA schedule.
func TestPacerConcurrent(t *testing.T) {
	now := time.Unix(1000, 0)
	p := NewPacer(func(int) Rate { return Rate{Every: time.Millisecond, Burst: 1} }, Rate{})
	p.Now = func() time.Time { return now }
	const n = 200
	var wg sync.WaitGroup
	seen := make([]bool, n)
	var mu sync.Mutex
	for range n {
		wg.Go(func() {
			w := p.Reserve(7)
			mu.Lock()
			seen[int(w/time.Millisecond)] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, ok := range seen {
		if !ok {
			t.Fatalf("no booking got the wait of %dms: bookings were lost", i)
		}
	}
}

func TestPacerForgetsIdleChats(t *testing.T) {
	now := time.Unix(1000, 0)
	p := NewPacer(func(int) Rate { return Rate{Every: time.Second, Burst: 1} }, Rate{})
	p.Now = func() time.Time { return now }
	for chat := 1; chat < forgetAfter; chat++ {
		p.Reserve(chat)
	}
	now = now.Add(time.Hour)
	p.Reserve(forgetAfter)
	if n := p.count.Load(); n > 1 {
		t.Errorf("%d chats kept after an idle hour, want only the new one", n)
	}
	if err := p.Wait(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}
