package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// testRetention: Prune deletes what is older than the retention says, in batches no
// larger than asked, and keeps every unsent reply and every row of a session whose plan
// waits for a decision or is being carried out. Each count is read back from the store.
func testRetention(t *testing.T, open func() Store) {
	ctx := context.Background()
	s := open()
	now := time.Now().UTC().Add(40 * 24 * time.Hour) // the outbox and inbound keys have real times
	ago := func(d time.Duration, i int) time.Time { return now.Add(-d + time.Duration(i)*time.Minute) }
	const day = 24 * time.Hour
	phases := map[string]core.Phase{
		"idle": core.PhaseOff, "drafting": core.PhasePlanning,
		"waiting": core.PhaseAwaitingApproval, "running": core.PhaseExecuting,
	}
	order := []string{"idle", "drafting", "waiting", "running"}
	// Rows are written oldest first, as a running gateway writes them: Prune walks ids
	// in order and stops at the first page reaching rows newer than the cut.
	sent := func(out []core.Outgoing) {
		for _, o := range out {
			if err := s.MarkSent(ctx, o.ID, "m", o.CreatedAt.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	to := func(id string) core.Address { return core.Address{Channel: "terminal", Account: "local", Chat: id} }
	for _, id := range order {
		se := plainSession(id)
		se.Phase = phases[id]
		commit(t, s, core.Change{Session: &se})
		var msgs []core.ChatMessage
		var evs []core.Event
		for i := range 5 {
			msgs = append(msgs, core.ChatMessage{Role: core.RoleUser, Content: fmt.Sprint("old ", i), At: ago(100*day, i)})
		}
		for i := range 3 {
			evs = append(evs, core.Event{Kind: core.EventProposed, Actor: core.AgentActor, At: ago(400*day, i)})
		}
		out := []core.Outgoing{
			{Reply: core.Reply{To: to(id), Text: "old sent 1"}, CreatedAt: ago(35*day, 0)},
			{Reply: core.Reply{To: to(id), Text: "old sent 2"}, CreatedAt: ago(35*day, 1)},
			{Reply: core.Reply{To: to(id), Text: "old sent 3"}, CreatedAt: ago(35*day, 2)},
			{Reply: core.Reply{To: to(id), Text: "old unsent"}, CreatedAt: ago(35*day, 3)},
		}
		commit(t, s, core.Change{SessionID: id, Messages: msgs, Events: evs, Outbox: out})
		sent(out[:3])
	}
	commit(t, s, core.Change{Events: []core.Event{{SessionID: "ghost", Kind: core.EventRefused, At: ago(400*day, 0)}}})
	for _, id := range order {
		out := []core.Outgoing{{Reply: core.Reply{To: to(id), Text: "new sent"}, CreatedAt: ago(day, 0)}}
		commit(t, s, core.Change{SessionID: id, Outbox: out,
			Messages: []core.ChatMessage{{Role: core.RoleUser, Content: "new", At: ago(day, 0)}},
			Events:   []core.Event{{Kind: core.EventAccepted, At: ago(day, 0)}}})
		sent(out)
	}
	var keys []core.InboundKey
	for i := range 3 {
		k := core.InboundKey{Channel: "slack", Account: "T1", EventID: fmt.Sprint("e", i)}
		keys = append(keys, k)
		commit(t, s, core.Change{SessionID: "idle", Inbound: &k})
	}

	count := func(table string) int {
		t.Helper()
		n := 0
		for _, id := range append(order, "ghost") {
			switch table {
			case "messages":
				m, err := s.Transcript(ctx, id, 0)
				if err != nil {
					t.Fatal(err)
				}
				n += len(m)
			case "plan_events":
				e, err := s.Events(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				n += len(e)
			}
		}
		switch table {
		case "outbox":
			sent, err := s.SentSince(ctx, "terminal", time.Time{}, 0)
			unsent, err2 := s.UnsentOutbox(ctx, nil, 0)
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			n = len(sent) + len(unsent)
		case "inbound":
			for _, k := range keys {
				if seen, err := s.SeenInbound(ctx, k); err != nil {
					t.Fatal(err)
				} else if seen {
					n++
				}
			}
		}
		return n
	}
	tables := []string{"messages", "plan_events", "outbox", "inbound"}
	before := map[string]int{}
	for _, tb := range tables {
		before[tb] = count(tb)
	}

	if p, err := s.Prune(ctx, store.Retention{}, now, store.PruneOptions{}); err != nil || p.Total() != 0 {
		t.Fatalf("Prune with no retention = %+v, %v; want nothing pruned", p, err)
	}
	for _, tb := range tables {
		if got := count(tb); got != before[tb] {
			t.Fatalf("%s: %d rows after a Prune that keeps everything, want %d", tb, got, before[tb])
		}
	}

	keep := store.Retention{Transcripts: 90 * day, Outbox: 30 * day, Inbound: 48 * time.Hour, Audit: 365 * day}
	left, batches := map[string]int{}, map[string]int{}
	for tb, n := range before {
		left[tb] = n
	}
	opt := store.PruneOptions{Batch: 2, AfterBatch: func(b store.PruneBatch) {
		table, rows := b.Table, b.Rows
		got := count(table)
		if rows > 2 || rows < 0 || left[table]-got != rows {
			t.Errorf("a batch of %s reported %d rows and removed %d; want the same, at most 2", table, rows, left[table]-got)
		}
		left[table] = got
		batches[table]++
	}}
	p, err := s.Prune(ctx, keep, now, opt)
	if err != nil {
		t.Fatal(err)
	}
	// idle and drafting lose their 5 old messages, 3 old sent replies and 3 old audit
	// rows; ghost its old audit row; waiting and running keep everything.
	want := store.Pruned{Transcripts: 10, Outbox: 6, Audit: 7, Inbound: 3}
	if p != want {
		t.Fatalf("Prune = %+v, want %+v", p, want)
	}
	for tb, n := range map[string]int64{"messages": want.Transcripts, "outbox": want.Outbox, "plan_events": want.Audit, "inbound": want.Inbound} {
		if got := count(tb); got != before[tb]-int(n) {
			t.Errorf("%s: %d rows left, want %d", tb, got, before[tb]-int(n))
		}
		if min := (int(n) + 1) / 2; batches[tb] < min {
			t.Errorf("%s: %d batches for %d rows; want at least %d of at most 2", tb, batches[tb], n, min)
		}
	}
	for _, id := range []string{"idle", "drafting"} {
		if m, _ := s.Transcript(ctx, id, 0); len(m) != 1 || m[0].Content != "new" {
			t.Errorf("%s's transcript after pruning = %+v; want only the new message", id, m)
		}
	}
	for _, id := range []string{"waiting", "running"} {
		if m, _ := s.Transcript(ctx, id, 0); len(m) != 6 {
			t.Errorf("%s (%s) lost transcript rows: %d left, want 6", id, phases[id], len(m))
		}
		if e, _ := s.Events(ctx, id); len(e) != 4 {
			t.Errorf("%s (%s) lost audit rows: %d left, want 4", id, phases[id], len(e))
		}
	}
	unsent, err := s.UnsentOutbox(ctx, nil, 0)
	if err != nil || len(unsent) != 4 {
		t.Fatalf("unsent replies after pruning = %d, %v; want all 4 kept", len(unsent), err)
	}
	if again, err := s.Prune(ctx, keep, now, opt); err != nil || again.Total() != 0 {
		t.Fatalf("a second Prune = %+v, %v; want nothing left to prune", again, err)
	}
}
