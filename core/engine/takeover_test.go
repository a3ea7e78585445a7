package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
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
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sessionID("busy")), "elsewhere/1/live", h.clock, time.Minute); err != nil || !ok {
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

// The unsent replies another replica committed are its own while it runs (it holds its
// replica lease): a start-up or takeover elsewhere leaves them, and delivers those of a
// replica that is gone (its lease taken over by a survivor) and rows without an owner.
// Of two deliverers that listed the same left-over row, the one that claims it first
// sends it.
func TestLeftRepliesOfALiveReplicaAreItsOwn(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	owners := map[string]string{"live": "elsewhere/1/live", "dead": "elsewhere/2/dead", "old": ""}
	for chat, owner := range owners {
		h.say(chat, "local", "/plan on")
		s := h.session(chat)
		row := core.Outgoing{Reply: core.Reply{To: addr(chat), Text: "left unsent in " + chat}, CreatedAt: h.clock, Owner: owner}
		if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: []core.Outgoing{row}}); err != nil {
			t.Fatal(err)
		}
	}
	for name, holder := range map[string]string{owners["live"]: owners["live"], owners["dead"]: "elsewhere/3/claimer"} {
		if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(name), holder, h.clock, time.Minute); err != nil || !ok {
			t.Fatalf("taking the replica lease of %s: %v %v", name, ok, err)
		}
	}
	n := h.out.count()
	sent, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range h.out.since(n) {
		texts = append(texts, r.Text)
	}
	slices.Sort(texts)
	if want := []string{"left unsent in dead", "left unsent in old"}; sent != 2 || !slices.Equal(texts, want) {
		t.Fatalf("DeliverLeft sent %d: %q; want %q (the live replica's row is its own)", sent, texts, want)
	}
	if left, err := h.st.UnsentOutbox(ctx, nil, 0); err != nil || len(left) != 1 || left[0].Owner != owners["live"] {
		t.Fatalf("unsent after the takeover: %+v, %v; want the live replica's row only", left, err)
	}

	// The live replica's lease expires: its row is left over now, and listed. Another
	// replica claims it between this listing and the send: it is not sent here.
	h.clock = h.clock.Add(2 * time.Minute)
	b, err := h.eng.Unsent(ctx, []string{"terminal"}, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := h.st.UnsentOutbox(ctx, nil, 0)
	if got, err := h.st.ClaimOutbox(ctx, left[0].ID, left[0].Attempts); err != nil || !got {
		t.Fatalf("the other replica's claim: %v %v", got, err)
	}
	n = h.out.count()
	if sent := b.Deliver(ctx); sent != 0 || len(h.out.since(n)) != 0 {
		t.Fatalf("a row another replica claimed was sent again (%d): %+v", sent, h.out.since(n))
	}
	// That replica died before sending: listed again, with the attempt it counted, the
	// row is sent here.
	if sent, err := h.eng.DeliverUnsent(ctx, []string{"terminal"}, time.Hour, nil); err != nil || sent != 1 {
		t.Fatalf("delivering the row left by the claimer: %d, %v; want 1", sent, err)
	}
	if got := h.out.since(n); len(got) != 1 || got[0].Text != "left unsent in live" {
		t.Fatalf("sent %+v; want the formerly live replica's row", got)
	}
}

// A replica on another host dies after committing a reply and before sending it. Its
// replica lease lapses (and a survivor claims it) while the session lease it held has not
// expired yet: the survivor's DeliverLeft sends the reply then, rather than leaving it for
// some replica's next start.
func TestDeliverLeftDuringTheClaimOfADeadReplica(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const dead, claimer = "otherhost/7/dead", "otherhost/8/claimer"
	h.say("left", "local", "/plan on")
	s := h.session("left")
	row := core.Outgoing{Reply: core.Reply{To: addr("left"), Text: "the dead replica's answer"}, CreatedAt: h.clock, Owner: dead}
	if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: []core.Outgoing{row}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.st.AcquireLease(ctx, engine.SessionLease(sessionID("left")), dead, h.clock, time.Minute); err != nil || !ok {
		t.Fatalf("the dead replica's session lease: %v %v", ok, err)
	}
	// While its replica lease is its own and unexpired, the session is its business.
	if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(dead), dead, h.clock, 15*time.Second); err != nil || !ok {
		t.Fatalf("the replica lease: %v %v", ok, err)
	}
	n := h.out.count()
	if sent, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour); err != nil || sent != 0 || len(h.out.since(n)) != 0 {
		t.Fatalf("DeliverLeft sent %d (%v) for a replica that still runs: %+v", sent, err, h.out.since(n))
	}
	// 20 s later its replica lease has expired and a survivor claims it; the session
	// lease has 40 s to go.
	h.clock = h.clock.Add(20 * time.Second)
	if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(dead), claimer, h.clock, 15*time.Second); err != nil || !ok {
		t.Fatalf("the survivor's claim: %v %v", ok, err)
	}
	sent, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour)
	if got := h.out.since(n); err != nil || sent != 1 || len(got) != 1 || got[0].Text != "the dead replica's answer" {
		t.Fatalf("DeliverLeft during the claim sent %d (%v): %+v; want the dead replica's answer", sent, err, got)
	}
}

// A left-over row that is claimed and then fails to send counts one attempt, not two:
// the claim counted it.
func TestClaimedRowThatFailsCountsOneAttempt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.say("left", "local", "/plan on")
	s := h.session("left")
	row := core.Outgoing{Reply: core.Reply{To: addr("left"), Text: "left unsent"}, CreatedAt: h.clock, Owner: "elsewhere/9/gone"}
	if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: []core.Outgoing{row}}); err != nil {
		t.Fatal(err)
	}
	p := h.process(failSender{}, nil, nil)
	if sent, err := p.eng.DeliverUnsent(ctx, []string{"terminal"}, time.Hour, nil); err != nil || sent != 0 {
		t.Fatalf("DeliverUnsent with a failing platform = %d, %v; want 0 sent", sent, err)
	}
	left, err := h.st.UnsentOutbox(ctx, nil, 0)
	if err != nil || len(left) != 1 || left[0].Attempts != 1 {
		t.Fatalf("after the failed attempt: %+v, %v; want the row unsent with 1 attempt", left, err)
	}
}

// A dead replica's reply in a session another live process holds the lease of (a
// chatty session, its lease kept between turns) is not the holder's to send: the
// survivor's DeliverLeft leaves it while the lease is held and its retry loop sends it,
// once, when the lease is free. The holder's own row stays the holder's.
func TestDeliverLeftInASessionBusyElsewhereIsSentWhenFree(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const dead, claimer, holder = "otherhost/7/dead", "otherhost/8/claimer", "otherhost/9/live"
	h.say("busy", "local", "/plan on")
	s := h.session("busy")
	rows := []core.Outgoing{
		{Reply: core.Reply{To: addr("busy"), Text: "the dead replica's answer"}, CreatedAt: h.clock, Owner: dead},
		{Reply: core.Reply{To: addr("busy"), Text: "the holder's own answer"}, CreatedAt: h.clock, Owner: holder},
	}
	if _, err := h.st.Commit(ctx, core.Change{Session: &s, Outbox: rows}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.st.AcquireLease(ctx, engine.ReplicaLease(dead), claimer, h.clock, time.Minute); err != nil || !ok {
		t.Fatalf("the survivor's claim of the dead replica: %v %v", ok, err)
	}
	name := engine.SessionLease(sessionID("busy"))
	if _, ok, err := h.st.AcquireLease(ctx, name, holder, h.clock, time.Minute); err != nil || !ok {
		t.Fatalf("the live holder's session lease: %v %v", ok, err)
	}
	n := h.out.count()
	if sent, err := h.eng.DeliverLeft(ctx, []string{"terminal"}, time.Hour); err != nil || sent != 0 {
		t.Fatalf("DeliverLeft sent %d (%v) in a session another live process holds", sent, err)
	}
	h.clock = h.clock.Add(40 * time.Second) // past the retry's backoff, the lease still held
	if sent := h.eng.RetryUnsent(ctx, []string{"terminal"}, time.Hour); sent != 0 {
		t.Fatalf("the retry sent %d while the session's lease is held elsewhere: %+v", sent, h.out.since(n))
	}
	if err := h.st.ReleaseLease(ctx, name, holder); err != nil {
		t.Fatal(err)
	}
	if sent := h.eng.RetryUnsent(ctx, []string{"terminal"}, time.Hour); sent != 1 {
		t.Fatalf("the retry sent %d once the lease was free; want the dead replica's answer", sent)
	}
	if again := h.eng.RetryUnsent(ctx, []string{"terminal"}, time.Hour); again != 0 {
		t.Errorf("a second retry sent %d, want 0", again)
	}
	got := h.out.since(n)
	if len(got) != 1 || got[0].Text != "the dead replica's answer" {
		t.Fatalf("sent %+v; want the dead replica's answer once (the holder's own row is its own)", got)
	}
	left, err := h.st.UnsentOutbox(ctx, nil, 0)
	if err != nil || len(left) != 1 || left[0].Owner != holder {
		t.Fatalf("unsent after the retry: %+v, %v; want the holder's own row only", left, err)
	}
}
