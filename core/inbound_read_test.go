package core_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
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

// bareSeenCounter is seenCounter without the optional store methods (SessionPlanReader
// among them): the engine checks the key with SeenInbound and reads the session alone.
type bareSeenCounter struct {
	core.Store
	seen *atomic.Int64
}

func (s bareSeenCounter) SeenInbound(ctx context.Context, k core.InboundKey) (bool, error) {
	s.seen.Add(1)
	return s.Store.SeenInbound(ctx, k)
}

// A redelivered plain message is answered once and counted as a duplicate, whether the
// store checks its key in the session's read (SessionPlan: no SeenInbound of its own)
// or has no such read (SeenInbound first, as before).
func TestDuplicateCheckedWithTheSessionRead(t *testing.T) {
	for _, combined := range []bool{true, false} {
		h := newHarness(t)
		sc := &seenCounter{Store: h.st}
		var st core.Store = sc
		if !combined {
			st = bareSeenCounter{Store: h.st, seen: &sc.seen}
		}
		obs := &countingObserver{counts: map[string]int{}}
		eng := h.waitOnCleanup(core.NewEngine(h.cfg, core.Deps{Store: st, Model: h.model, Tools: h.tools, Out: h.out,
			Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))
		m := core.Message{ID: "upd-7", Address: addr("dup"), Sender: core.Person{ID: "local", Name: "local"}, Text: "hello", Time: h.clock}
		for range 3 {
			if err := eng.Handle(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := obs.snapshot()
		if got["inbound terminal handled"] != 1 || got["inbound terminal duplicate"] != 2 {
			t.Errorf("combined=%v: outcomes %v; want 1 handled, 2 duplicates", combined, got)
		}
		if n := len(h.model.requests()); n != 1 {
			t.Errorf("combined=%v: %d model calls, want 1", combined, n)
		}
		if n := h.out.count(); n != 1 {
			t.Errorf("combined=%v: %d replies, want 1", combined, n)
		}
		wantSeen := int64(3) // each delivery checked on its own
		if combined {
			wantSeen = 0 // in SessionPlan's read
		}
		if n := sc.seen.Load(); n != wantSeen {
			t.Errorf("combined=%v: %d SeenInbound calls, want %d", combined, n, wantSeen)
		}
	}
}
