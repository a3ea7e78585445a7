package slack

import (
	"context"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// A plan file whose read is overtaken by two rewrites (its file refilled with another
// session's plan, see core.ReadWhole) is uploaded with its own content.
func TestPlanAttachmentOvertakenReadUploadsItsOwnPlan(t *testing.T) {
	e := newEnv(t)
	path, reads := coretest.OvertakenPlanFile(t)
	f := core.File{Name: "plan-v1.md", MIME: "text/markdown", Path: path}
	if err := e.Channel.upload(context.Background(), "C1", "", f, "Plan v1"); err != nil {
		t.Fatal(err)
	}
	e.api.mu.Lock()
	var uploads []string
	for _, data := range e.api.uploads {
		uploads = append(uploads, string(data))
	}
	e.api.mu.Unlock()
	if len(uploads) != 1 || uploads[0] != coretest.OvertakenNext {
		t.Errorf("uploads %q, want one holding A's plan as it now is, %q", uploads, coretest.OvertakenNext)
	}
	if n := reads(); n != 2 {
		t.Errorf("the attachment was read %d times through core.ReadWhole, want 2 (the overtaken read discarded)", n)
	}
}
