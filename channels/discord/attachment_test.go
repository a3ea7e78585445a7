package discord

import (
	"io"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// A plan file whose read is overtaken by two rewrites (its file refilled with another
// session's plan, see core.ReadWhole) is uploaded with its own content.
func TestPlanAttachmentOvertakenReadUploadsItsOwnPlan(t *testing.T) {
	path, reads := coretest.OvertakenPlanFile(t)
	files, err := readFiles([]core.File{{Name: "plan-v1.md", MIME: "text/markdown", Path: path}})
	if err != nil || len(files) != 1 {
		t.Fatalf("readFiles: %d files, %v; want 1", len(files), err)
	}
	got, _ := io.ReadAll(files[0].Reader)
	if string(got) != coretest.OvertakenNext {
		t.Errorf("the upload holds %q, want A's plan as it now is, %q", got, coretest.OvertakenNext)
	}
	if n := reads(); n != 2 {
		t.Errorf("the attachment was read %d times through core.ReadWhole, want 2 (the overtaken read discarded)", n)
	}
}
