package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// asyncFunc is a Handler from a function that reports the outcome on a channel, as a
// queueing engine would.
type asyncFunc func(ctx context.Context, m core.Message) <-chan error

// EnqueueThen calls then with what f's channel brings, on its own goroutine.
func (f asyncFunc) EnqueueThen(ctx context.Context, m core.Message, then func(error)) {
	done := f(ctx, m)
	go func() { then(<-done) }()
}

// gatedTransport holds every users.info request until open is closed: a slow lookup of
// the sender's name. A stubborn gate ignores the request's context too, as a server that
// accepted the connection and never answers can (until a transport timeout).
type gatedTransport struct {
	open     chan struct{}
	stubborn bool
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/users.info") {
		if g.stubborn {
			<-g.open
		} else {
			select {
			case <-g.open:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// runChannel starts a channel on st with handler h and returns a function that stops it
// and waits for Run to return.
func runChannel(t *testing.T, f *fakeSlack, cfg Config, st State, logs *channeltest.LogBuffer, h channels.Handler) (*Channel, func()) {
	t.Helper()
	c, err := newChannel(context.Background(), cfg, st, channeltest.NewLogger(logs), testTuning())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// recorder is a plain handler that reports every message it is given.
func recorder() (channels.Handler, chan core.Message) {
	got := make(chan core.Message, 16)
	return channels.HandlerFunc(func(_ context.Context, m core.Message) error { got <- m; return nil }), got
}

// An envelope is in the store before it is acknowledged, while the sender's name is still
// being looked up; a process that dies after the ack (its handler never finishes) loses
// nothing: the next start handles the message.
func TestEnvelopeStoredBeforeAckAndReplayedAfterACrash(t *testing.T) {
	f := newFakeSlack(t)
	logs := &channeltest.LogBuffer{}
	st := &channeltest.MemState{}
	gate := &gatedTransport{open: make(chan struct{})}
	cfg := Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL(), HTTPClient: &http.Client{Transport: gate}}
	dying := asyncFunc(func(context.Context, core.Message) <-chan error {
		return make(chan error) // the process dies before the turn ends
	})
	_, stop := runChannel(t, f, cfg, st, logs, dying)

	msg := f.dm("D0ALICE", alice, "remember me", "")
	f.waitAck(msg.Envelope)
	saved, ok, err := st.ChannelState(context.Background(), Name, f.team, "inbox")
	if err != nil || !ok || !strings.Contains(saved, msg.TS) {
		t.Fatalf("at the ack the envelope is not in the store: %q, %v, %v", saved, ok, err)
	}
	close(gate.open)
	stop()

	h, got := recorder()
	runChannel(t, f, Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL()}, st, logs, h)
	select {
	case m := <-got:
		if m.Text != "remember me" || m.ID != messageKey("D0ALICE", msg.TS) {
			t.Errorf("replayed %q (id %s), want the stored message", m.Text, m.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the acknowledged message was never handled after the restart\n%s", logs.String())
	}
}

// failingState refuses writes while fail is set: a full disk.
type failingState struct {
	channeltest.MemState
	fail atomic.Bool
}

func (s *failingState) SetChannelState(ctx context.Context, ch, acc, key, value string) error {
	if s.fail.Load() {
		return errors.New("database or disk is full")
	}
	return s.MemState.SetChannelState(ctx, ch, acc, key, value)
}

func (s *failingState) SetChannelStateLazy(ctx context.Context, ch, acc, key, value string) error {
	return s.SetChannelState(ctx, ch, acc, key, value)
}

func (s *failingState) SetChannelStateWith(ctx context.Context, ch, acc, key string, lazy bool, value func() (string, error)) error {
	if s.fail.Load() {
		return errors.New("database or disk is full")
	}
	return s.MemState.SetChannelStateWith(ctx, ch, acc, key, lazy, value)
}

// An envelope that cannot be stored is not acknowledged, so Slack delivers it again.
func TestEnvelopeNotStoredIsNotAcknowledged(t *testing.T) {
	f := newFakeSlack(t)
	logs := &channeltest.LogBuffer{}
	st := &failingState{}
	st.fail.Store(true)
	h, got := recorder()
	runChannel(t, f, Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL()}, st, logs, h)
	lost := f.dm("D0ALICE", alice, "while the disk is full", "")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "not acknowledging them") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", logs.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	st.fail.Store(false)
	later := f.dm("D0ALICE", alice, "after space returned", "")
	f.waitAck(later.Envelope)
	if _, acked := f.ackLatency(lost.Envelope); acked {
		t.Error("an envelope that was not stored was acknowledged")
	}
	if m := <-got; m.Text != "after space returned" {
		t.Errorf("handled %q", m.Text)
	}
}

// A message the handler gave up on while stopping stays in the inbox, Drain counts it,
// and the next start replays it; one that was answered is not replayed.
func TestMessageStoppedByShutdownIsReplayed(t *testing.T) {
	f := newFakeSlack(t)
	logs := &channeltest.LogBuffer{}
	st := &channeltest.MemState{}
	cfg := Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL()}
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
			out <- nil
			return out
		}
		go func() {
			<-release
			out <- fmt.Errorf("handling message: %w", context.Canceled)
		}()
		return out
	})
	c1, stop := runChannel(t, f, cfg, st, logs, h1)
	f.waitAck(f.dm("D0ALICE", alice, "answered before the stop", "").Envelope)
	f.waitAck(f.dm("D0ALICE", alice, "queued behind a long turn", "").Envelope)
	f.waitFor("both messages handed over", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(first) == 2
	})
	stop()
	close(release)
	left, err := c1.Drain(context.Background())
	if err != nil || left != 1 {
		t.Fatalf("Drain = %d, %v; want 1 left", left, err)
	}

	h2, got := recorder()
	runChannel(t, f, cfg, st, logs, h2)
	f.waitAck(f.dm("D0ALICE", alice, "after the restart", "").Envelope)
	var second []string
	for len(second) == 0 || second[len(second)-1] != "after the restart" {
		second = append(second, (<-got).Text)
	}
	if want := []string{"queued behind a long turn", "after the restart"}; strings.Join(second, "|") != strings.Join(want, "|") {
		t.Errorf("handled after the restart: %q, want %q", second, want)
	}
}

// A DM that mentions the bot comes as message.im and as app_mention, with different event
// ids. Answered once even when the second arrives after a restart.
func TestDMDeliveredTwiceAnsweredOnceAcrossRestart(t *testing.T) {
	e := newEnv(t)
	const dm = "D0ALICE"
	ts := e.api.userTS()
	text := "<@" + e.api.botUser + "> answer me once"
	asMessage := map[string]any{"type": "message", "channel_type": "im", "user": alice, "text": text, "ts": ts, "channel": dm, "event_ts": ts}
	asMention := map[string]any{"type": "app_mention", "user": alice, "text": text, "ts": ts, "channel": dm, "event_ts": ts}
	e.api.waitAck(e.api.resend("EvIM1", asMessage, 0))
	e.api.waitText(dm, "ok")
	e.Idle()
	e.Stop()

	e.Start()
	e.api.waitAck(e.api.resend("EvMENTION1", asMention, 0))
	e.api.waitAck(e.api.dm(dm, alice, "a later message", "").Envelope)
	deadline := time.Now().Add(5 * time.Second)
	for e.Model.CallCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	e.Idle()
	if n := e.Model.CallCount(); n != 2 {
		t.Errorf("model called %d times, want 2: the DM was answered again after the restart", n)
	}
}

// A users.info that does not answer holds up no message: it goes on with the id, and the
// name, once known, is used for the person's next message.
func TestSlowUserInfoDoesNotHoldMessages(t *testing.T) {
	f := newFakeSlack(t)
	f.name(alice, "Alice A.")
	logs := &channeltest.LogBuffer{}
	gate := &gatedTransport{open: make(chan struct{}), stubborn: true}
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(gate.open) }) }
	t.Cleanup(openGate)
	cfg := Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL(), HTTPClient: &http.Client{Transport: gate}}
	c, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, channeltest.NewLogger(logs), testTuning())
	if err != nil {
		t.Fatal(err)
	}
	c.nameWait = time.Millisecond
	h, got := recorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	defer func() {
		cancel()
		<-done
	}()

	f.dm("D0ALICE", alice, "first", "")
	select {
	case m := <-got:
		if m.Sender.ID != alice || m.Sender.Name != alice {
			t.Errorf("sender while users.info hangs: %+v, want the id as the name", m.Sender)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a hanging users.info held the message back")
	}
	openGate()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.namesMu.Lock()
		n, ok := c.names[alice]
		c.namesMu.Unlock()
		if ok {
			if n.name != "Alice A." {
				t.Fatalf("remembered name %q", n.name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late users.info answer was never remembered")
		}
		time.Sleep(2 * time.Millisecond)
	}
	f.dm("D0ALICE", alice, "second", "")
	if m := <-got; m.Sender.Name != "Alice A." {
		t.Errorf("the next message's sender: %+v", m.Sender)
	}
}

// A running adapter adopts the inbox another replica left (a DM it acknowledged and never
// handled): the envelope is in this adapter's saved inbox when AdoptInbox returns and is
// handled here. Before Run nothing is adopted.
func TestAdoptInboxOfAnotherReplica(t *testing.T) {
	f := newFakeSlack(t)
	logs := &channeltest.LogBuffer{}
	deadSt := &channeltest.MemState{}
	dying := asyncFunc(func(context.Context, core.Message) <-chan error { return make(chan error) })
	cfg := Config{BotToken: f.botToken, AppToken: f.appToken, APIURL: f.URL()}
	_, stop := runChannel(t, f, cfg, deadSt, logs, dying)
	msg := f.dm("D0ALICE", alice, "left by a dead replica", "")
	f.waitAck(msg.Envelope)
	stop()
	saved, ok, err := deadSt.ChannelState(context.Background(), Name, f.team, "inbox")
	if err != nil || !ok {
		t.Fatalf("the dead replica's inbox: %v %v", ok, err)
	}

	st := &channeltest.MemState{}
	early, err := newChannel(context.Background(), cfg, st, channeltest.NewLogger(logs), testTuning())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := early.AdoptInbox(context.Background(), saved); !errors.Is(err, channels.ErrNotReceiving) {
		t.Errorf("AdoptInbox before Run = %v, want ErrNotReceiving", err)
	}
	gate := make(chan struct{})
	got := make(chan core.Message, 4)
	h := channels.HandlerFunc(func(_ context.Context, m core.Message) error { <-gate; got <- m; return nil })
	c, _ := runChannel(t, f, cfg, st, logs, h)
	for d := c.disp.Load(); d == nil || !d.receiving.Load(); d = c.disp.Load() {
		time.Sleep(time.Millisecond) // until Run has replayed its own inbox
	}
	if n, err := c.AdoptInbox(context.Background(), `{"pending":[{"key":"x"`); err != nil || n != 0 {
		t.Errorf("adopting a damaged record = %d, %v; want it dropped", n, err)
	}
	n, err := c.AdoptInbox(context.Background(), saved)
	if err != nil || n != 1 {
		t.Fatalf("AdoptInbox = %d, %v; want the one envelope", n, err)
	}
	if mine, _, _ := st.ChannelState(context.Background(), Name, f.team, "inbox"); !strings.Contains(mine, msg.TS) {
		t.Errorf("the adopted envelope is not in this adapter's saved inbox: %q", mine)
	}
	close(gate)
	select {
	case m := <-got:
		if m.Text != "left by a dead replica" || !m.Replays {
			t.Errorf("handled %q (replays %v), want the adopted DM as a replay", m.Text, m.Replays)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the adopted DM was never handled\n%s", logs.String())
	}
}
