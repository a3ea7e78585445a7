package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// DeliverLeft sends the replies another process committed and never sent, once, and
// leaves those of a session whose lease a live process holds to that process.
func TestDeliverLeft(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.say("left", "local", "/plan on")
	h.say("busy", "local", "/plan on")
	for _, chat := range []string{"left", "busy"} {
		s := h.session(chat)
		if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: []core.Outgoing{{Reply: core.Reply{To: addr(chat), Text: "left unsent in " + chat}, CreatedAt: h.clock}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := h.st.AcquireLease(ctx, core.SessionLease(sessionID("busy")), "elsewhere/1/live", h.clock, time.Minute); err != nil || !ok {
		t.Fatalf("taking the busy session's lease: %v %v", ok, err)
	}
	n := h.out.count()
	sent, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := h.out.since(n)
	if sent != 1 || len(got) != 1 || got[0].Text != "left unsent in left" {
		t.Fatalf("DeliverLeft sent %d: %+v; want the left session's reply only", sent, got)
	}
	if again, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour); err != nil || again != 0 {
		t.Errorf("a second DeliverLeft sent %d (%v), want 0: the row is marked sent", again, err)
	}
}
