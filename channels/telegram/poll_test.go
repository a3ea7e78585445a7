package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// fakeClock is the poller's clock and pause: a pause returns at once and moves the clock
// on by step, so a test counts calls and waits instead of timing them.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	step  time.Duration
	waits []time.Duration
	stop  int // the pause with this number (1-based) ends the run
	end   context.CancelFunc
}

func (k *fakeClock) install(c *Channel) {
	c.now = func() time.Time {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.now
	}
	c.pause = func(ctx context.Context, d time.Duration) error {
		k.mu.Lock()
		k.waits = append(k.waits, d)
		k.now = k.now.Add(k.step)
		n := len(k.waits)
		k.mu.Unlock()
		if n == k.stop {
			k.end()
			return context.Canceled
		}
		return ctx.Err()
	}
}

func (k *fakeClock) pauses() []time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.waits)
}

// boundSpin ends the run if the poller calls getUpdates more than limit times, so a
// poller that spins fails the test instead of hanging it.
func boundSpin(ctx context.Context, f *fakeAPI, limit int, end context.CancelFunc) {
	go func() {
		for ctx.Err() == nil {
			if len(f.callsOf("getUpdates")) > limit {
				end()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

func newPollChannel(t *testing.T, f *fakeAPI, st State, logs *channeltest.LogBuffer) *Channel {
	t.Helper()
	c, err := newChannel(context.Background(), Config{Token: f.token, APIURL: f.URL(), PollTimeout: time.Second}, st, channeltest.NewLogger(logs), testTuning())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func queueRaw(f *fakeAPI, id int64, raw string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, fakeUpdate{id: id, raw: json.RawMessage(raw)})
	if f.nextUpd < id {
		f.nextUpd = id
	}
	f.notifyLocked()
}

// An update whose id cannot be read is served again by every getUpdates: the poller
// waits longer each time instead of spinning, and logs the error once a minute.
func TestPollBacksOffBehindAnUpdateWithoutID(t *testing.T) {
	for _, raw := range []string{
		`{"update_id":null,"message":{"text":"?"}}`,
		`{"message":{"text":"no id at all"}}`,
		`["not", "an", "update"]`,
		`{"update_id":-5}`,
	} {
		t.Run(raw, func(t *testing.T) {
			f := newFakeAPI(t)
			queueRaw(f, 1001, raw)
			logs := &channeltest.LogBuffer{}
			c := newPollChannel(t, f, &channeltest.MemState{}, logs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), step: 25 * time.Second, stop: 6, end: cancel}
			clock.install(c)
			boundSpin(ctx, f, 200, cancel)
			var handled int
			if err := c.Run(ctx, channels.HandlerFunc(func(context.Context, core.Message) error { handled++; return nil })); err != nil {
				t.Fatal(err)
			}
			if n := len(f.callsOf("getUpdates")); n != 6 {
				t.Errorf("getUpdates was called %d times for 6 pauses, want 6", n)
			}
			want := []time.Duration{5, 10, 20, 20, 20, 20}
			for i := range want {
				want[i] *= time.Millisecond
			}
			if got := clock.pauses(); !slices.Equal(got, want) {
				t.Errorf("pauses %v, want %v (doubling from holdAfterErr up to maxBackoff)", got, want)
			}
			// Polls at 0s, 25s, ... 125s: logged at 0s and again at 75s.
			if n := strings.Count(logs.String(), "update_id cannot be read"); n != 2 {
				t.Errorf("the error was logged %d times over 125s, want 2:\n%s", n, logs.String())
			}
			if !strings.Contains(logs.String(), "repeated=2") {
				t.Errorf("the second line does not count the held-back ones:\n%s", logs.String())
			}
			if handled != 0 {
				t.Errorf("an update without an id was handled")
			}
		})
	}
}

// An update whose id is readable but not an integer is confirmed and skipped: the next
// getUpdates asks from past it, and the updates after it are handled.
func TestPollSkipsPastAnUnreadableUpdateWithAKnownID(t *testing.T) {
	for _, id := range []string{`"1001"`, `1001.0`} {
		t.Run(id, func(t *testing.T) {
			f := newFakeAPI(t)
			queueRaw(f, 1001, `{"update_id":`+id+`,"message":{"message_id":1,"chat":{"id":5,"type":"private"},"text":"hi"}}`)
			logs := &channeltest.LogBuffer{}
			c := newPollChannel(t, f, &channeltest.MemState{}, logs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second, stop: 1, end: cancel}
			clock.install(c)
			boundSpin(ctx, f, 200, cancel)
			got := make(chan string, 10)
			done := make(chan error, 1)
			go func() {
				done <- c.Run(ctx, channels.HandlerFunc(func(_ context.Context, m core.Message) error { got <- m.ID; return nil }))
			}()
			f.waitFor("a getUpdates past the unreadable update", func() bool {
				for _, call := range f.callsL("getUpdates") {
					if call.Params["offset"] == "1002" {
						return true
					}
				}
				return ctx.Err() != nil
			})
			good := f.say(5, user{id: 9, name: "ann"}, "hello")
			select {
			case id := <-got:
				if id != strconv.FormatInt(good, 10) {
					t.Errorf("handled update %s, want %d", id, good)
				}
			case err := <-done:
				t.Fatalf("Run ended (%v) before the next update was handled; getUpdates calls: %d", err, len(f.callsOf("getUpdates")))
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if p := clock.pauses(); len(p) != 0 {
				t.Errorf("the poller paused %v behind an update it could skip", p)
			}
			if n := strings.Count(logs.String(), "skipping a telegram update that cannot be read"); n != 1 {
				t.Errorf("logged %d times, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// asyncFunc is a Handler from a function that reports the outcome on a channel, as a
// queueing engine would.
type asyncFunc func(ctx context.Context, m core.Message) <-chan error

// EnqueueThen calls then with what f's channel brings, on its own goroutine.
func (f asyncFunc) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	done := f(ctx, m)
	go func() { then(<-done) }()
}

// A message the handler gave up on while stopping (a context error) is not handled: it
// stays in the inbox, Drain counts it, and the next start replays it.
func TestUpdateStoppedByShutdownIsReplayed(t *testing.T) {
	f := newFakeAPI(t)
	st := &channeltest.MemState{}
	logs := &channeltest.LogBuffer{}
	c1 := newPollChannel(t, f, st, logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	var mu sync.Mutex
	var first []string
	h1 := asyncFunc(func(_ context.Context, m core.Message) <-chan error {
		out := make(chan error, 1)
		mu.Lock()
		first = append(first, m.Text)
		n := len(first)
		mu.Unlock()
		if n == 1 {
			out <- nil // answered
			return out
		}
		go func() {
			<-release // queued behind a long turn, then interrupted
			out <- fmt.Errorf("handling message: %w", context.Canceled)
		}()
		return out
	})
	done := make(chan error, 1)
	go func() { done <- c1.Run(ctx, h1) }()
	u := user{id: 9, name: "ann"}
	f.say(5, u, "answered before the stop")
	f.say(5, u, "queued behind a long turn")
	f.waitFor("both messages handed over", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(first) == 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(release)
	left, err := c1.Drain(context.Background())
	if err != nil || left != 1 {
		t.Fatalf("Drain = %d, %v; want 1 left", left, err)
	}
	if !strings.Contains(logs.String(), "kept for the next start") {
		t.Errorf("the stop does not say what was kept:\n%s", logs.String())
	}

	// The next start: the kept update comes first, then what is new.
	c2 := newPollChannel(t, f, st, logs)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	got := make(chan string, 10)
	done2 := make(chan error, 1)
	go func() {
		done2 <- c2.Run(ctx2, channels.HandlerFunc(func(_ context.Context, m core.Message) error { got <- m.Text; return nil }))
	}()
	f.say(5, u, "after the restart")
	var second []string
	for len(second) == 0 || second[len(second)-1] != "after the restart" {
		second = append(second, <-got)
	}
	cancel2()
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	want := []string{"queued behind a long turn", "after the restart"}
	if !slices.Equal(second, want) {
		t.Errorf("handled after the restart: %q, want %q", second, want)
	}
}

// A full disk: the batch cannot be saved, so nothing is confirmed: no getUpdates is made
// until a save works. The update is handled at once (its handling overlaps the save) and
// once: Telegram is not asked for it a second time. Ready names the problem and the log
// says it once a minute. When space returns the save works and the next getUpdates
// confirms the update.
func TestPollFullDiskHoldsTheOffsetAndRecovers(t *testing.T) {
	f := newFakeAPI(t)
	disk := &diskState{State: &channeltest.MemState{}}
	disk.full.Store(true)
	logs := &channeltest.LogBuffer{}
	c := newPollChannel(t, f, disk, logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var pauses []time.Duration
	var whileFull error
	var offsets []string
	c.pause = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		pauses = append(pauses, d)
		now = now.Add(10 * time.Second)
		n := len(pauses)
		mu.Unlock()
		if n == 4 {
			whileFull = c.Ready()
			for _, call := range f.callsOf("getUpdates") {
				offsets = append(offsets, call.Params["offset"])
			}
			disk.full.Store(false)
		}
		return ctx.Err()
	}
	boundSpin(ctx, f, 200, cancel)
	got := make(chan string, 10)
	done := make(chan error, 1)
	id := f.say(5, user{id: 9, name: "ann"}, "hello")
	go func() {
		done <- c.Run(ctx, channels.HandlerFunc(func(_ context.Context, m core.Message) error { got <- m.ID; return nil }))
	}()
	select {
	case m := <-got:
		if m != strconv.FormatInt(id, 10) {
			t.Errorf("handled %s, want %d", m, id)
		}
	case err := <-done:
		t.Fatalf("Run ended (%v) before the update was handled; %d getUpdates:\n%s", err, len(f.callsOf("getUpdates")), logs.String())
	}
	next := strconv.FormatInt(id+1, 10)
	f.waitFor("a getUpdates confirming the update", func() bool {
		return slices.ContainsFunc(f.callsL("getUpdates"), func(c apiCall) bool { return c.Params["offset"] == next })
	})
	if err := c.Ready(); err != nil {
		t.Errorf("Ready() = %v once saving works again", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if whileFull == nil || !strings.Contains(whileFull.Error(), "database or disk is full") {
		t.Errorf("Ready() while the disk was full = %v", whileFull)
	}
	if !slices.Equal(offsets, []string{"0"}) {
		t.Errorf("getUpdates offsets while full: %v; want the one call that got the update", offsets)
	}
	mu.Lock()
	waits := slices.Clone(pauses[:4])
	mu.Unlock()
	tune := testTuning()
	want := []time.Duration{tune.holdAfterErr, 2 * tune.holdAfterErr, min(4*tune.holdAfterErr, tune.retry.MaxBackoff), tune.retry.MaxBackoff}
	if !slices.Equal(waits, want) {
		t.Errorf("pauses between failed saves %v, want %v (doubling to the cap)", waits, want)
	}
	if disk.failed.Load() < 4 {
		t.Errorf("only %d saves failed", disk.failed.Load())
	}
	if n := strings.Count(logs.String(), "saving the update inbox failed"); n != 1 {
		t.Errorf("the failure was logged %d times in 40s, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "saving the update inbox works again") {
		t.Error("the recovery was not logged")
	}
	select {
	case m := <-got:
		t.Errorf("update %s handled twice", m)
	default:
	}
}
