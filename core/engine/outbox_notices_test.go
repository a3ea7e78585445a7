package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// Replies no transition produced go through the outbox too: committed, then delivered,
// and sent by the next process when the send failed.

func TestReportMissedGoesThroughTheOutbox(t *testing.T) {
	h := newHarness(t)
	h.toPending("a", "Deploy")
	a := h.process(failSender{}, nil, nil)
	missed := []core.MissedNudge{{Nudge: core.Nudge{SessionID: sessionID("a")}, ScheduledAt: h.clock.Add(-3 * time.Hour)}}
	if err := a.eng.ReportMissed(context.Background(), sessionID("a"), missed); err != nil {
		t.Fatalf("ReportMissed: %v", err)
	}
	rows := unsent(t, h.st)
	if len(rows) != 1 || rows[0].Reply.Kind != core.ReplyNudge || !strings.Contains(rows[0].Reply.Text, "1 reminder was missed") {
		t.Fatalf("outbox after a failed send: %+v", rows)
	}
	b := h.process(nil, nil, nil)
	if n, err := b.eng.DeliverUnsent(context.Background(), nil, 0, nil); err != nil || n != 1 {
		t.Fatalf("DeliverUnsent = %d, %v", n, err)
	}
	if got := b.out.all(); len(got) != 1 || got[0].Text != rows[0].Reply.Text {
		t.Fatalf("delivered after the restart: %+v", got)
	}
}

func TestErrorNoticeGoesThroughTheOutbox(t *testing.T) {
	h := newHarness(t)
	a := h.process(failSender{}, nil, nil)
	a.model.push(sessionID("a"), step{err: errors.New("model down")})
	_ = a.eng.Handle(context.Background(), core.Message{ID: "ev-n1", Address: addr("a"), Sender: core.Person{ID: "local"}, Text: "hello", Time: h.clock})
	rows := unsent(t, h.st)
	if len(rows) != 1 || rows[0].Reply.Kind != core.ReplyNotice || !strings.Contains(rows[0].Reply.Text, "The model could not answer") {
		t.Fatalf("outbox after a failed send: %+v", rows)
	}
	if rows[0].Reply.InReplyTo != "ev-n1" {
		t.Errorf("the notice answers %q, want the message ev-n1", rows[0].Reply.InReplyTo)
	}
}
