package machine

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A plan people can edit (docs/design.md §13): an approver answers the pending version with
// an edited copy of its file, and it becomes the next version, "edited by" them, which still
// needs a decision. Who may edit is checked before Apply, as for any decision. Only the
// message's first attachment is read; each way it can fail to be the pending version's file
// (missing, too large, not text, not parsing, refused by the judge, changing nothing) is
// one refusal, and nothing changes. Its status line must name the pending version, since an
// edit of an older one would silently drop what the newer one changed; a file without one
// is taken as an edit of the pending version.

// editedFile is GuardEditedFile.
func (x *transition) editedFile() bool {
	if x.cur == nil {
		x.refusePhase("edit")
		return false
	}
	cur := *x.cur
	if len(x.in.Files) == 0 {
		x.refusef("Send the edited copy of plan v%d's file: %s. /plan show sends the file again.", cur.Version, editHow(x.in.Rules.EditHints, x.s.Address.Channel))
		return false
	}
	f := x.in.Files[0]
	if f.Data == nil && f.Size == 0 {
		x.refusef("I could not download %s; nothing changed. Send it again.", fileLabel(f))
		return false
	}
	if size := max(f.Size, int64(len(f.Data))); size > plan.MaxFileBytes {
		x.refusef("%s is %d KB; an edited plan file may be at most %d KB. Nothing changed.", fileLabel(f), (size+1023)/1024, plan.MaxFileBytes>>10)
		return false
	}
	if !IsTextFile(f.Name, f.MIME) {
		x.refusef("%s is not a text file; send the plan back as the .md file plangate wrote. Nothing changed.", fileLabel(f))
		return false
	}
	if v, ok := fileVersion(f.Data); ok && v != cur.Version {
		x.refusef("%s is plan v%d, but %s is the pending one; nothing changed. Edit the file of v%d (/plan show sends it).",
			fileLabel(f), v, PlanLabel(cur), cur.Version)
		return false
	}
	body, diff, refusal := plan.ReadEdited(cur.Body, f.Data)
	if refusal != "" {
		x.refuse(refusal)
		return false
	}
	if problems := append(CommandProblems(body, x.in.Rules), Widens(body, x.in.Rules.Boundary)...); len(problems) > 0 {
		x.refusef("The edited file was not taken: %s. Nothing changed.", strings.Join(problems, "; "))
		return false
	}
	diff.From = cur.Version
	x.body, x.editDiff = plan.Inherit(body, x.in.Rules.Boundary), diff
	return true
}

// edit stores the edited body as the next version, pending with a new approval id, and
// supersedes the version it was edited from. It keeps the requesters of the version
// before, its editor being refused as its author (EditedBy); the versions proposed after
// it count the editor among their requesters.
func (x *transition) edit() error {
	prev, in := *x.cur, x.in
	status, ok := x.m.PlanNext("", TrigEdit)
	if !ok {
		return fmt.Errorf("no plan status for an edited version")
	}
	diff := x.editDiff
	np := core.Plan{ID: in.IDs.Plan, ApprovalID: in.IDs.Approval, SessionID: x.s.ID, Version: prev.Version + 1,
		Status: status, Body: x.body, Hash: plan.Hash(x.body), Requesters: prev.Requesters,
		EditedBy: x.s.Address.Channel + ":" + in.Actor.ID, Changes: &diff, Run: plan.Run{Tree: in.Tree}, CreatedAt: in.Now, UpdatedAt: in.Now}
	np.File = filepath.Join(in.Rules.PlansDir, x.s.Address.Dir(), plan.FileName(np.CreatedAt, np.Body.Title, np.Version))
	voidApprovals(&prev) // the edited version needs its own approvals
	old, err := x.settle(prev, TrigEdit, fmt.Sprintf("superseded by v%d (edited %s)", np.Version, x.by()))
	if err != nil {
		return err
	}
	n := &x.next
	n.Phase, n.PlanID, n.ApprovalID = x.phase, np.ID, np.ApprovalID
	// Later versions build on the edit, so its author is one of those who asked for them.
	n.Requesters = Asked(n.Requesters, np.EditedBy, in.Name)
	x.record(x.event(core.EventSuperseded, &old, fmt.Sprintf("by v%d, edited %s", np.Version, x.by())),
		x.event(core.EventProposed, &np, "edited "+x.by()+": "+np.Body.Title))
	x.o.Change.CancelNudges = true
	x.o.Change.Nudges = append(reminders(*n, in.Rules, np.ID, in.Now), expiry(*n, in.Rules, np.ID, in.Now)...)
	x.o.newPlan = np.ID
	x.o.Change.Plans = append(x.o.Change.Plans, np)
	r := PlanReply(x.next, np)
	decide := "It still needs a decision: /plan accept · /plan revise <feedback>"
	r.Text = proposalText(np, in.who(), prev.Version, decide, in.Rules) + x.stuck(np)
	x.o.sayReply(r, "The edited plan could not be delivered here ({error}). It is saved as "+np.File+"; /plan show sends it again.")
	return nil
}

// editHow says how an edited file is sent back on a channel: its adapter's words
// (Rules.EditHints), else the command that works everywhere.
func editHow(hints map[string]string, channel string) string {
	return cmp.Or(hints[channel], "attach it to /plan edit")
}

// fileVersion reads N from the status line "Version N · ..." that plangate writes under
// the title; false when the file has none before its first section.
func fileVersion(data []byte) (int, bool) {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			return 0, false
		}
		rest, ok := strings.CutPrefix(line, "Version ")
		if !ok {
			continue
		}
		digits, _, _ := strings.Cut(rest, " ")
		if v, err := strconv.Atoi(digits); err == nil && v > 0 {
			return v, true
		}
	}
	return 0, false
}

// IsTextFile reports whether an inbound file may be a plan file: platforms label .md files
// variously (text/markdown, text/plain, application/octet-stream), so a text MIME type or a
// text file name will do. Adapters do not download other files for /plan edit.
func IsTextFile(name, mime string) bool {
	if strings.HasPrefix(strings.ToLower(mime), "text/") {
		return true
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".txt":
		return true
	}
	return false
}

// fileLabel names an inbound file in a refusal.
func fileLabel(f core.File) string {
	if f.Name == "" {
		return "The file"
	}
	return strconv.Quote(filepath.Base(f.Name))
}
