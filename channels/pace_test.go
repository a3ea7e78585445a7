package channels

import (
	"context"
	"sync"
	"sync/atomic"
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
	steps := []struct {
		what  string
		chat  int
		pass  time.Duration // time passing before the step
		block time.Duration // a rate limit answered before the step
		want  time.Duration
	}{
		{what: "first of a burst", chat: 1},
		{what: "second of a burst", chat: 1},
		{what: "after the burst", chat: 1, want: time.Second},
		{what: "and then one a second", chat: 1, want: 2 * time.Second},
		{what: "another chat is not slowed down", chat: -1},
		{what: "its own rate", chat: -1},
		{what: "its own rate after the burst", chat: -1, want: 3 * time.Second},
		{what: "no chat is not paced", chat: 0},
		{what: "held back by a rate limit", chat: 2, block: 5 * time.Second, want: 5 * time.Second},
		{what: "a quiet minute refills", chat: 1, pass: time.Minute},
		{what: "the whole burst", chat: 1},
	}
	for _, st := range steps {
		now = now.Add(st.pass)
		if st.block > 0 {
			p.Block(st.chat, st.block)
		}
		if got := p.Reserve(st.chat); got != st.want {
			t.Errorf("%s: chat %d waits %v, want %v", st.what, st.chat, got, st.want)
		}
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
// counts, so the waits handed out are exactly the bucket's schedule.
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

// BenchmarkPacerReserve books messages from parallel goroutines, each in its own chat and
// under its limit: the path every paced message takes.
func BenchmarkPacerReserve(b *testing.B) {
	p := NewPacer(func(int64) Rate { return Rate{Every: time.Nanosecond, Burst: 3} }, Rate{Every: time.Nanosecond, Burst: 30})
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		chat := -1000000000000 - next.Add(1) // a supergroup id
		for pb.Next() {
			if p.Reserve(chat) > time.Millisecond {
				b.Error("a chat under its limit had to wait")
			}
		}
	})
}
