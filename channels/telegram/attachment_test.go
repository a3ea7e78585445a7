package telegram

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// A plan file whose read is overtaken by two rewrites (its file refilled with another
// session's plan, see core.ReadWhole) goes out with its own content: the attachment is
// read through core.ReadWhole, not os.ReadFile.
func TestPlanAttachmentOvertakenReadSendsItsOwnPlan(t *testing.T) {
	e := newEnv(t)
	path, reads := coretest.OvertakenPlanFile(t)
	r := core.Reply{To: e.addr(group, 0), Kind: core.ReplyPlan, Text: "Plan v1 — A (1 step)\nDecide: /plan accept",
		Attachments: []core.File{{Name: "plan-v1.md", MIME: "text/markdown", Path: path}}}
	if _, err := e.Channel.Send(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	docs := e.api.callsOf("sendDocument")
	if len(docs) != 1 {
		t.Fatalf("%d documents sent, want 1", len(docs))
	}
	if got := docs[0].Data; got != coretest.OvertakenNext {
		t.Errorf("the document holds %q, want A's plan as it now is, %q", got, coretest.OvertakenNext)
	}
	if n := reads(); n != 2 {
		t.Errorf("the attachment was read %d times through core.ReadWhole, want 2 (the overtaken read discarded)", n)
	}
}
