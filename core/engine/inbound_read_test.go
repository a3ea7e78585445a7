package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// seenCounter counts the engine's separate inbound checks.
type seenCounter struct {
	*store.Store
	seen atomic.Int64
}

func (s *seenCounter) SeenInbound(ctx context.Context, k core.InboundKey) (bool, error) {
	s.seen.Add(1)
	return s.Store.SeenInbound(ctx, k)
}

// A redelivered plain message is answered once and counted as a duplicate, its key
// checked in the session's read (SessionPlan: no SeenInbound of its own).
func TestDuplicateCheckedWithTheSessionRead(t *testing.T) {
	h := newHarness(t)
	sc := &seenCounter{Store: h.st}
	obs := &countingObserver{counts: map[string]int{}}
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: sc, Model: h.model, Tools: h.tools, Out: h.out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))
	m := core.Message{ID: "upd-7", Address: addr("dup"), Sender: core.Person{ID: "local", Name: "local"}, Text: "hello", Time: h.clock}
	for range 3 {
		if err := eng.Handle(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := obs.snapshot()
	if got["inbound terminal handled"] != 1 || got["inbound terminal duplicate"] != 2 {
		t.Errorf("outcomes %v; want 1 handled, 2 duplicates", got)
	}
	if n := len(h.model.requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	if n := h.out.count(); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
	if n := sc.seen.Load(); n != 0 {
		t.Errorf("%d SeenInbound calls, want none: the key is checked in SessionPlan's read", n)
	}
}
