package discord

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// A message that arrives while an edited file downloads is delivered after it.
func TestFetchChainKeepsOrder(t *testing.T) {
	c := &Channel{log: slog.New(slog.DiscardHandler)}
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	h := channels.HandlerFunc(func(_ context.Context, m core.Message) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m.ID)
		if len(got) == 3 {
			close(done)
		}
		return nil
	})
	d := newDispatcher(c, h, context.Background())
	release := make(chan struct{})
	d.fetches.deliver(d, work{msg: core.Message{ID: "edit"}}, func(w *work) {
		<-release // the download is slow
		w.msg.Attachments = []core.File{{Name: "plan.md", Data: []byte("# x")}}
	})
	d.fetches.deliver(d, work{msg: core.Message{ID: "after-1"}}, nil)
	d.fetches.deliver(d, work{msg: core.Message{ID: "after-2"}}, nil)
	mu.Lock()
	early := len(got)
	mu.Unlock()
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the messages were not delivered")
	}
	if early != 0 || got[0] != "edit" || got[1] != "after-1" || got[2] != "after-2" {
		t.Errorf("delivered %v (%d before the download ended), want edit, after-1, after-2 and none early", got, early)
	}
	// With nothing downloading, a message goes at once.
	d.fetches.deliver(d, work{msg: core.Message{ID: "plain"}}, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a plain message was not delivered")
		}
		time.Sleep(time.Millisecond)
	}
}
