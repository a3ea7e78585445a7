package store

import (
	"context"
	"errors"
	"testing"

	"github.com/plangate/plangate/core"
)

func TestOutboxRidesInTheCommit(t *testing.T) {
	ctx := context.Background()
	st, path := openTest(t)
	tg := core.Address{Channel: "telegram", Account: "1", Chat: "2"}
	sl := core.Address{Channel: "slack", Account: "T", Chat: "C"}
	sess := core.Session{ID: tg.SessionID(), Address: tg, Phase: core.PhaseOff}
	out := []core.Outgoing{
		{Reply: core.Reply{To: tg, Text: "Plan mode is on.", InReplyTo: "u1"}},
		{Reply: core.Reply{To: tg, Kind: core.ReplyPlan, Text: "Plan v1", Attachments: []core.File{{Name: "p.md", Path: "/x/p.md"}},
			Buttons: []core.Button{{Label: "Accept", Action: core.Action{Kind: core.ActionAccept, ApprovalID: "a1"}}}}},
	}
	key := core.InboundKey{Channel: "telegram", Account: "1", EventID: "u1"}
	if _, err := st.Commit(ctx, core.Change{Session: &sess, Inbound: &key, Outbox: out}); err != nil {
		t.Fatal(err)
	}
	if out[0].ID == 0 || out[1].ID <= out[0].ID || out[0].SessionID != sess.ID {
		t.Fatalf("ids not assigned in order: %+v", out)
	}
	// A duplicate inbound event rolls back the whole change: no reply is queued twice.
	dup := []core.Outgoing{{Reply: core.Reply{To: tg, Text: "again"}}}
	if _, err := st.Commit(ctx, core.Change{SessionID: sess.ID, Inbound: &key, Outbox: dup}); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := st.Commit(ctx, core.Change{SessionID: sl.SessionID(), Outbox: []core.Outgoing{{Reply: core.Reply{To: sl, Text: "slack"}}}}); err != nil {
		t.Fatal(err)
	}

	got, err := st.UnsentOutbox(ctx, []string{"telegram"}, 0)
	if err != nil || len(got) != 2 || got[0].Reply.Text != "Plan mode is on." || got[1].Reply.Buttons[0].Action.ApprovalID != "a1" ||
		got[1].Reply.Attachments[0].Path != "/x/p.md" || got[0].Reply.InReplyTo != "u1" {
		t.Fatalf("unsent telegram: %+v %v", got, err)
	}
	if all, err := st.UnsentOutbox(ctx, nil, 0); err != nil || len(all) != 3 {
		t.Fatalf("unsent all: %d %v", len(all), err)
	}
	if one, err := st.UnsentOutbox(ctx, nil, 1); err != nil || len(one) != 1 || one[0].ID != out[0].ID {
		t.Fatalf("limit 1: %+v %v", one, err)
	}

	if err := st.MarkSent(ctx, out[0].ID, "m100", leaseT0); err != nil {
		t.Fatal(err)
	}
	if err := st.NoteOutboxAttempt(ctx, out[1].ID); err != nil {
		t.Fatal(err)
	}
	// A killed process: reopen; what was marked sent stays sent, the rest is still queued.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	got, err = st2.UnsentOutbox(ctx, []string{"telegram"}, 0)
	if err != nil || len(got) != 1 || got[0].ID != out[1].ID || got[0].Attempts != 1 {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if err := st2.DropOutbox(ctx, out[1].ID, "older than channels.outbox_max_age"); err != nil {
		t.Fatal(err)
	}
	if got, err := st2.UnsentOutbox(ctx, []string{"telegram"}, 0); err != nil || len(got) != 0 {
		t.Fatalf("after drop: %+v %v", got, err)
	}
	// Marking a dropped reply sent changes nothing (it stays dropped, unsent).
	if err := st2.MarkSent(ctx, out[1].ID, "m101", leaseT0); err != nil {
		t.Fatal(err)
	}
	var sentAt *string
	if err := st2.r.QueryRowContext(ctx, `SELECT sent_at FROM outbox WHERE id = ?`, out[1].ID).Scan(&sentAt); err != nil || sentAt != nil {
		t.Fatalf("dropped reply marked sent: %v %v", sentAt, err)
	}
	n, err := st2.PruneOutbox(ctx, leaseT0.AddDate(100, 0, 0))
	if err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if all, err := st2.UnsentOutbox(ctx, nil, 0); err != nil || len(all) != 1 || all[0].Reply.Text != "slack" {
		t.Fatalf("prune must keep unsent replies: %+v %v", all, err)
	}
}
