package coretest

import (
	"context"
	"errors"
	"testing"

	"github.com/plangate/plangate/core"
)

func TestModelAnswersInOrderWithErrorsAndHook(t *testing.T) {
	m := NewModel()
	boom := errors.New("provider down")
	m.Push("s", core.ModelResponse{Text: "first"})
	m.Fail("s", boom)
	var hooked []string
	m.Hook(func(req core.ModelRequest) { hooked = append(hooked, req.SessionID) })
	ctx := context.Background()
	req := core.ModelRequest{SessionID: "s"}
	if r, err := m.Complete(ctx, req); err != nil || r.Text != "first" {
		t.Fatalf("call 1: %+v, %v; want first", r, err)
	}
	if _, err := m.Complete(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("call 2: err %v, want %v", err, boom)
	}
	if r, err := m.Complete(ctx, req); err != nil || r.Text != "ok" {
		t.Fatalf("call 3 (queue empty): %+v, %v; want ok", r, err)
	}
	if len(hooked) != 3 || len(m.Calls()) != 3 {
		t.Errorf("hook saw %v, calls %d; want 3 each", hooked, len(m.Calls()))
	}
}

func TestModelBlockEndsWithTheContext(t *testing.T) {
	m := NewModel()
	m.Block(make(chan struct{}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Complete(ctx, core.ModelRequest{SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked call with an ended context: %v", err)
	}
}
