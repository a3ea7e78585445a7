package channels_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// stub is a channel without optional capabilities whose Run does what the test says.
type stub struct {
	name string
	run  func(ctx context.Context) error

	mu     sync.Mutex
	sent   []core.Reply
	typing []core.Address
}

func (s *stub) Name() string { return s.name }

func (s *stub) Run(ctx context.Context, _ channels.Handler) error {
	if s.run == nil {
		<-ctx.Done()
		return nil
	}
	return s.run(ctx)
}

func (s *stub) Send(_ context.Context, r core.Reply) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r)
	return "stub-id", nil
}

func (s *stub) Sent() []core.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]core.Reply(nil), s.sent...)
}

// typer is a stub that can show a typing indicator.
type typer struct{ stub }

func (t *typer) Typing(_ context.Context, a core.Address) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.typing = append(t.typing, a)
	return nil
}

func to(channel string) core.Address {
	return core.Address{Channel: channel, Account: "acc", Chat: "c1"}
}

func TestHubSendRouting(t *testing.T) {
	a, b := channeltest.NewFake("a"), channeltest.NewFake("b")
	hub := channels.NewHub(nil, a, b)
	ctx := context.Background()

	id, err := hub.Send(ctx, core.Reply{To: to("b"), Text: "hello b"})
	if err != nil || id != "b-1" {
		t.Fatalf("Send to b: id %q, err %v; want b-1", id, err)
	}
	if got := b.Replies(); len(got) != 1 || got[0].Text != "hello b" {
		t.Fatalf("b got %+v", got)
	}
	if got := a.Replies(); len(got) != 0 {
		t.Fatalf("a got %+v, want nothing", got)
	}

	_, err = hub.Send(ctx, core.Reply{To: to("slack"), Text: "x"})
	if err == nil || !strings.Contains(err.Error(), `unknown channel "slack"`) {
		t.Fatalf("unknown channel: got %v", err)
	}

	boom := errors.New("platform down")
	a.FailSend(boom)
	_, err = hub.Send(ctx, core.Reply{To: to("a"), Text: "x"})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "on a") {
		t.Fatalf("failing send: got %v, want it wrapped with the channel name", err)
	}
}

func TestHubSendReplace(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		editErr   error
		ctx       func() context.Context
		wantID    string
		wantErr   bool
		wantEdits int
		wantSends int // replies after the first, plain one
	}{
		{name: "editor edits in place", wantID: "f-1", wantEdits: 1},
		{name: "failed edit sends anew", editErr: errors.New("too old"), wantID: "f-2", wantSends: 1},
		{
			name:    "cancelled edit does not send",
			editErr: context.Canceled,
			ctx: func() context.Context {
				c, cancel := context.WithCancel(ctx)
				cancel()
				return c
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := channeltest.NewFake("f")
			hub := channels.NewHub(nil, f)
			id, err := hub.Send(ctx, core.Reply{To: to("f"), Text: "step 1 running"})
			if err != nil {
				t.Fatal(err)
			}
			f.FailEdit(tt.editErr)
			sendCtx := ctx
			if tt.ctx != nil {
				sendCtx = tt.ctx()
			}
			got, err := hub.Send(sendCtx, core.Reply{To: to("f"), Text: "step 1 done", ReplaceID: id})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if got != tt.wantID {
				t.Errorf("id %q, want %q", got, tt.wantID)
			}
			edits := f.Edits()
			if len(edits) != tt.wantEdits {
				t.Fatalf("edits %+v, want %d", edits, tt.wantEdits)
			}
			if tt.wantEdits > 0 && (edits[0].ID != id || edits[0].Reply.Text != "step 1 done") {
				t.Errorf("edit %+v, want %s changed to the new text", edits[0], id)
			}
			replies := f.Replies()
			if len(replies) != 1+tt.wantSends {
				t.Fatalf("replies %+v, want %d", replies, 1+tt.wantSends)
			}
			if tt.wantSends > 0 && replies[1].ReplaceID != "" {
				t.Errorf("new message still carries ReplaceID %q", replies[1].ReplaceID)
			}
		})
	}

	t.Run("channel without editor sends anew", func(t *testing.T) {
		s := &stub{name: "s"}
		hub := channels.NewHub(nil, s)
		id, err := hub.Send(ctx, core.Reply{To: to("s"), Text: "v2", ReplaceID: "old"})
		if err != nil || id != "stub-id" {
			t.Fatalf("id %q, err %v", id, err)
		}
		sent := s.Sent()
		if len(sent) != 1 || sent[0].Text != "v2" || sent[0].ReplaceID != "" {
			t.Fatalf("sent %+v, want one new message without ReplaceID", sent)
		}
	})
}

func TestHubTyping(t *testing.T) {
	ctx := context.Background()
	ty, plain := &typer{stub: stub{name: "ty"}}, &stub{name: "plain"}
	hub := channels.NewHub(nil, ty, plain)
	if err := hub.Typing(ctx, to("ty")); err != nil {
		t.Fatal(err)
	}
	if len(ty.typing) != 1 || ty.typing[0] != to("ty") {
		t.Fatalf("typing calls %+v", ty.typing)
	}
	if err := hub.Typing(ctx, to("plain")); err != nil {
		t.Fatalf("channel without Typer: %v, want nil", err)
	}
	if err := hub.Typing(ctx, to("nope")); err == nil {
		t.Fatal("no error for an unknown channel")
	}
}

func TestHubDuplicateNamePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"x"`) {
			t.Fatalf("recovered %v, want a panic naming the channel", r)
		}
	}()
	channels.NewHub(nil, &stub{name: "x"}, &stub{name: "x"})
}

// runHub runs hub in the background and returns a function that waits for Run's result.
func runHub(t *testing.T, ctx context.Context, hub *channels.Hub, h channels.Handler) func() error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx, h) }()
	return func() error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("Hub.Run did not return")
			return nil
		}
	}
}

func TestHubRun(t *testing.T) {
	t.Run("delivers on every channel and stops with the context", func(t *testing.T) {
		a, b := channeltest.NewFake("a"), channeltest.NewFake("b")
		var mu sync.Mutex
		var got []string
		h := channels.HandlerFunc(func(_ context.Context, m core.Message) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, m.Address.Channel+":"+m.Text)
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		wait := runHub(t, ctx, channels.NewHub(nil, a, b), h)
		for _, d := range []struct {
			f    *channeltest.Fake
			text string
		}{{a, "one"}, {b, "two"}} {
			if err := d.f.Deliver(ctx, core.Message{Text: d.text}); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if err := wait(); err != nil {
			t.Fatalf("Run: %v, want nil after cancel", err)
		}
		if strings.Join(got, ",") != "a:one,b:two" {
			t.Fatalf("handled %v", got)
		}
	})

	t.Run("a channel that ends does not stop the others", func(t *testing.T) {
		returned := make(chan struct{})
		ended := &stub{name: "ended", run: func(context.Context) error {
			close(returned)
			return nil
		}}
		f := channeltest.NewFake("f")
		ctx, cancel := context.WithCancel(context.Background())
		wait := runHub(t, ctx, channels.NewHub(nil, ended, f), channels.HandlerFunc(
			func(context.Context, core.Message) error { return nil }))
		// Deliver succeeds only while f's Run is still running. The sleep gives a wrongly
		// cancelling hub the time to stop f.
		<-returned
		time.Sleep(20 * time.Millisecond)
		dctx, dcancel := context.WithTimeout(ctx, time.Second)
		defer dcancel()
		if err := f.Deliver(dctx, core.Message{Text: "still here"}); err != nil {
			t.Fatalf("fake stopped with the ended channel: %v", err)
		}
		cancel()
		if err := wait(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	})

	t.Run("first failure cancels the others and is returned", func(t *testing.T) {
		boom := errors.New("connection lost")
		failing := &stub{name: "telegram", run: func(context.Context) error { return boom }}
		stoppedBy := make(chan error, 1)
		other := &stub{name: "slack", run: func(ctx context.Context) error {
			<-ctx.Done()
			stoppedBy <- ctx.Err()
			return ctx.Err() // an echo of the cancellation is not a failure
		}}
		wait := runHub(t, context.Background(), channels.NewHub(nil, other, failing), nil)
		err := wait()
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "channel telegram") {
			t.Fatalf("Run: %v, want the telegram failure wrapped with its name", err)
		}
		if e := <-stoppedBy; !errors.Is(e, context.Canceled) {
			t.Fatalf("other channel stopped by %v", e)
		}
	})

	t.Run("no channels", func(t *testing.T) {
		if err := channels.NewHub(nil).Run(context.Background(), nil); err == nil {
			t.Fatal("Run with no channels returned nil")
		}
	})
}

// retirer is a stub that retires buttons.
type retirer struct {
	stub
	retired []core.Reply
}

func (r *retirer) Retire(_ context.Context, rep core.Reply) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retired = append(r.retired, rep)
	return nil
}

func TestHubSendsDecisionsToRetirer(t *testing.T) {
	ctx := context.Background()
	rt := &retirer{stub: stub{name: "r"}}
	plain := &stub{name: "p"}
	hub := channels.NewHub(nil, rt, plain)
	for _, ch := range []string{"r", "p"} {
		if _, err := hub.Send(ctx, core.Reply{To: to(ch), Kind: core.ReplyDecided, Ref: "ap1", Text: "accepted"}); err != nil {
			t.Fatalf("Send on %s: %v", ch, err)
		}
	}
	if _, err := hub.Send(ctx, core.Reply{To: to("r"), Kind: core.ReplyDecided}); err != nil {
		t.Fatal(err)
	}
	if len(rt.retired) != 1 || rt.retired[0].Ref != "ap1" || len(rt.Sent()) != 0 {
		t.Errorf("retirer got Retire %+v and Send %+v; want one Retire of ap1 and no Send", rt.retired, rt.Sent())
	}
	if sent := plain.Sent(); len(sent) != 1 || sent[0].Kind != core.ReplyDecided {
		t.Errorf("a channel without buttons got %+v, want the ReplyDecided through Send", sent)
	}
}

// TestHubOnReplyCountsOutcomes: every Send is reported once, by channel: a post and an
// edit in place are sent, a platform error failed, an unknown channel dropped.
func TestHubOnReplyCountsOutcomes(t *testing.T) {
	ctx := context.Background()
	f := channeltest.NewFake("f")
	hub := channels.NewHub(nil, f)
	var got []string
	hub.OnReply(func(channel, outcome string) { got = append(got, channel+" "+outcome) })
	id, err := hub.Send(ctx, core.Reply{To: to("f"), Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Send(ctx, core.Reply{To: to("f"), Text: "one, edited", ReplaceID: id}); err != nil {
		t.Fatal(err)
	}
	f.FailSend(errors.New("platform down"))
	if _, err := hub.Send(ctx, core.Reply{To: to("f"), Text: "two"}); err == nil {
		t.Error("a failing platform's send succeeded")
	}
	_, err = hub.Send(ctx, core.Reply{To: to("nope"), Text: "three"})
	if err == nil || !strings.Contains(err.Error(), `sending reply: unknown channel "nope"`) {
		t.Errorf("unknown channel: %v", err)
	}
	if s := strings.Join(got, ", "); s != "f sent, f sent, f failed, nope dropped" {
		t.Errorf("outcomes: %s", s)
	}
}

// dropper drops events itself and reports them (channels.InboundNoter).
type dropper struct {
	stub
	dropped channels.Dropped
}

func (d *dropper) NoteInbound(fn func(string)) { d.dropped.Set(fn) }

func TestHubOnInboundNamesTheChannel(t *testing.T) {
	tg, plain := &dropper{stub: stub{name: "telegram"}}, &stub{name: "terminal"}
	hub := channels.NewHub(nil, tg, plain)
	var got []string
	hub.OnInbound(func(channel, outcome string) { got = append(got, channel+"/"+outcome) })
	tg.dropped.Note(channels.InboundDuplicate)
	tg.dropped.Note(channels.InboundDuplicate)
	if want := []string{"telegram/duplicate", "telegram/duplicate"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("reported %v, want %v", got, want)
	}
	var unset channels.Dropped
	unset.Note(channels.InboundDuplicate) // reports nothing, and does not panic
}
