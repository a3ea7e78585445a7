package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
)

// commitLog records the changes committed through it.
type commitLog struct {
	*store.Store
	mu      sync.Mutex
	changes []core.Change
}

func (c *commitLog) Commit(ctx context.Context, ch core.Change) (core.Session, error) {
	s, err := c.Store.Commit(ctx, ch)
	if err == nil {
		c.mu.Lock()
		c.changes = append(c.changes, ch)
		c.mu.Unlock()
	}
	return s, err
}

func (c *commitLog) since(n int) []core.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]core.Change(nil), c.changes[n:]...)
}

func (c *commitLog) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.changes)
}

// A person's plain message for the agent is no decision: it is committed with its event
// key without waiting for the disk; a decision (/plan on) with its key waits.
func TestPlainMessageWithKeyIsLazy(t *testing.T) {
	h := newHarness(t)
	cl := &commitLog{Store: h.st}
	eng := h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: cl, Model: h.model, Out: h.out, Now: func() time.Time { return h.clock }}))
	keyed := func(id, text string) core.Change {
		t.Helper()
		n := cl.count()
		m := core.Message{ID: id, Address: addr("lazy"), Sender: core.Person{ID: "local", Name: "local"}, Text: text, Time: h.clock}
		if err := eng.Handle(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		for _, ch := range cl.since(n) {
			if ch.Inbound != nil && ch.Inbound.EventID == id {
				return ch
			}
		}
		t.Fatalf("no commit carried event %s", id)
		return core.Change{}
	}
	if ch := keyed("m1", "hello"); !ch.Lazy {
		t.Error("a plain message's commit waits for the disk")
	}
	if ch := keyed("m2", "/plan on"); ch.Lazy {
		t.Error("/plan on was committed lazily")
	}
}
