package channeltest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

func TestFakeConformance(t *testing.T) {
	RunConformance(t, func(t *testing.T) Harness {
		f := NewFake("fake")
		addr := core.Address{Channel: "fake", Account: "acc", Chat: "c1"}
		return Harness{
			Channel: f,
			Address: addr,
			Inject: func(ctx context.Context, sender, text string) error {
				err := f.Deliver(ctx, core.Message{
					Address: addr, Sender: core.Person{ID: sender}, Text: text, Time: time.Now(),
				})
				if errors.Is(err, ErrNotRunning) {
					return err
				}
				return nil // a platform does not see the handler's errors
			},
			Shown: func() []string {
				var out []string
				for _, r := range f.Replies() {
					out = append(out, r.Text)
				}
				for _, e := range f.Edits() {
					out = append(out, e.Reply.Text)
				}
				return out
			},
		}
	})
}

func TestFakeDeliver(t *testing.T) {
	f := NewFake("")
	if f.Name() != "fake" {
		t.Fatalf("default name %q", f.Name())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := f.Deliver(ctx, core.Message{Text: "x"}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Deliver before Run: %v, want ErrNotRunning", err)
	}

	// Deliver waits for a Run that starts later, fills in the channel name and returns the
	// handler's error.
	boom := errors.New("boom")
	var got core.Message
	h := channels.HandlerFunc(func(_ context.Context, m core.Message) error {
		got = m
		return boom
	})
	runCtx, stop := context.WithCancel(context.Background())
	delivered := make(chan error, 1)
	go func() { delivered <- f.Deliver(context.Background(), core.Message{Text: "hi"}) }()
	time.Sleep(10 * time.Millisecond)
	runDone := make(chan error, 1)
	go func() { runDone <- f.Run(runCtx, h) }()
	if err := <-delivered; !errors.Is(err, boom) {
		t.Fatalf("Deliver: %v, want the handler's error", err)
	}
	if got.Text != "hi" || got.Address.Channel != "fake" {
		t.Fatalf("handler got %+v", got)
	}
	stop()
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := f.Deliver(ctx2, core.Message{}); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Deliver after Run ended: %v, want ErrNotRunning", err)
	}
}

func TestFakeSendEditWait(t *testing.T) {
	f := NewFake("f")
	ctx := context.Background()

	var wg sync.WaitGroup
	const n = 20
	for range n {
		wg.Go(func() {
			if _, err := f.Send(ctx, core.Reply{Text: "x"}); err != nil {
				t.Error(err)
			}
		})
	}
	got, err := f.WaitFor(ctx, n)
	wg.Wait()
	if err != nil || len(got) != n {
		t.Fatalf("WaitFor: %d replies, %v", len(got), err)
	}

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if got, err := f.WaitFor(short, n+1); !errors.Is(err, context.DeadlineExceeded) || len(got) != n {
		t.Fatalf("WaitFor beyond what was sent: %d replies, %v", len(got), err)
	}

	if err := f.Edit(ctx, "f-3", core.Reply{Text: "edited"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Edit(ctx, "f-99", core.Reply{}); err == nil {
		t.Fatal("editing an id never returned succeeded")
	}
	if err := f.Edit(ctx, "other-1", core.Reply{}); err == nil {
		t.Fatal("editing another channel's id succeeded")
	}
	if e := f.Edits(); len(e) != 1 || e[0].ID != "f-3" || e[0].Reply.Text != "edited" {
		t.Fatalf("edits %+v", e)
	}

	boom := errors.New("down")
	f.FailSend(boom)
	if _, err := f.Send(ctx, core.Reply{}); !errors.Is(err, boom) {
		t.Fatalf("Send: %v, want the injected failure", err)
	}
	f.FailSend(nil)
	if id, err := f.Send(ctx, core.Reply{}); err != nil || id != "f-21" {
		t.Fatalf("Send after recovery: %q, %v", id, err)
	}
}
