package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
)

// countingObserver keeps what the engine reports.
type countingObserver struct {
	mu      sync.Mutex
	counts  map[string]int
	pending []int
}

func (o *countingObserver) add(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[key]++
}

func (o *countingObserver) Decision(kind string)                     { o.add("decision " + kind) }
func (o *countingObserver) ModelRequest(out string, _ time.Duration) { o.add("model " + out) }
func (o *countingObserver) ModelTokens(phase string, p, c, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts["tokens "+phase+" prompt"] += int(p)
	o.counts["tokens "+phase+" cached"] += int(c)
	o.counts["tokens "+phase+" completion"] += int(n)
}
func (o *countingObserver) ToolCall(tool, out string)    { o.add("tool " + tool + " " + out) }
func (o *countingObserver) Nudge(out string)             { o.add("nudge " + out) }
func (o *countingObserver) Inbound(ch, out string)       { o.add("inbound " + ch + " " + out) }
func (o *countingObserver) OutboxDropped(ch, why string) { o.add("dropped " + ch + " " + why) }
func (o *countingObserver) AccessRefused(ch, why string) { o.add("access " + ch + " " + why) }
func (o *countingObserver) PlansPending(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = append(o.pending, n)
}

func (o *countingObserver) snapshot() (map[string]int, []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := make(map[string]int, len(o.counts))
	for k, v := range o.counts {
		c[k] = v
	}
	return c, append([]int(nil), o.pending...)
}

// TestObserverSeesDecisionsAndFailures: refusals, revisions, abandonment and a failing
// model are reported as they are committed, and the pending count follows the store.
func TestObserverSeesDecisionsAndFailures(t *testing.T) {
	h := newHarness(t)
	obs := &countingObserver{counts: map[string]int{}}
	h.eng = h.waitOnCleanup(engine.NewEngine(h.cfg, engine.Deps{Store: h.st, Model: h.model, Tools: h.tools, Out: h.out,
		Now: func() time.Time { return h.clock }, NudgeSpecs: nudges.Specs{}, Observer: obs}))

	h.toPending("c", "Docs")
	h.say("c", "mallory", "/plan accept") // not the owner: refused
	h.model.push(sessionID("c"), calls(propose("Docs v2", "Only step")))
	h.say("c", "local", "/plan revise shorter")
	h.say("c", "local", "/plan off")
	h.model.push(sessionID("c"), step{err: errors.New("provider down")})
	h.say("c", "local", "hello")
	h.eng.CountPending(context.Background())

	got, pending := obs.snapshot()
	want := map[string]int{
		"decision refused":         1,
		"decision revised":         1,
		"decision abandoned":       1,
		"model error":              1,
		"inbound terminal refused": 1,
		"inbound terminal handled": 5, // /plan on, the request, revise, off, hello
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if got["model ok"] < 2 {
		t.Errorf("model ok: %d, want at least the two proposals", got["model ok"])
	}
	if got["decision accepted"] != 0 || got["inbound terminal failed"] != 0 {
		t.Errorf("counted what did not happen: %v", got)
	}
	// Proposed (1), revised (0) and proposed again (1), turned off (0), the explicit count.
	if s := fmt.Sprint(pending); s != "[1 0 1 0 0]" {
		t.Errorf("pending counts reported: %s, want [1 0 1 0 0]", s)
	}
}
