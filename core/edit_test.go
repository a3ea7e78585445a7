package core_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// sayFiles delivers a message with attachments, as an adapter hands over a downloaded file.
func (h *harness) sayFiles(chat, sender, text string, files ...core.File) []core.Reply {
	h.t.Helper()
	n := h.out.count()
	m := core.Message{Address: addr(chat), Sender: core.Person{ID: sender, Name: sender}, Text: text, Attachments: files, Time: h.clock}
	if err := h.eng.Handle(context.Background(), m); err != nil {
		h.t.Fatalf("handling %q: %v", text, err)
	}
	return h.out.since(n)
}

// editedCopy is the pending plan's file as plangate wrote it with extra lines after its
// last step, as a person would send it back; any plan file when none is pending.
func editedCopy(t *testing.T, h *harness, chat, extra string) core.File {
	t.Helper()
	s := h.session(chat)
	if s.Phase != core.PhaseAwaitingApproval {
		p := core.Plan{Version: 1, Status: core.PlanPending, Body: plan.Body{Title: "T", Steps: []plan.Step{{ID: "1", Text: "A step", Status: plan.StepPending}}}}
		return core.File{Name: "plan.md", MIME: "text/markdown", Data: core.RenderPlanMarkdown(p, s.Phase, chat, core.Reach{})}
	}
	p := h.plan(s.PlanID)
	data, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatalf("reading the plan file: %v", err)
	}
	last := "- [ ] " + p.Body.Steps[len(p.Body.Steps)-1].Text + "\n"
	if !strings.Contains(string(data), last) {
		t.Fatalf("plan file has no line %q:\n%s", last, data)
	}
	return core.File{Name: "edited.md", MIME: "text/markdown", Data: []byte(strings.Replace(string(data), last, last+extra+"\n", 1))}
}

func TestEditRoundTrip(t *testing.T) {
	h := newHarness(t)
	v1 := h.toPending("main", "Docs")
	file := editedCopy(t, h, "main", "- [ ] Proofread the changelog\n  - [ ] no typos left")
	replies := h.sayFiles("main", "local", "/plan edit", file)

	s := h.session("main")
	plans := h.plans("main")
	if s.Phase != core.PhaseAwaitingApproval || len(plans) != 2 {
		t.Fatalf("phase %s with %d plans; replies:\n%s", s.Phase, len(plans), joinTexts(replies))
	}
	old, v2 := plans[0], plans[1]
	if old.ID != v1.ID || old.Status != core.PlanSuperseded {
		t.Errorf("v1 is %s, want superseded", old.Status)
	}
	if v2.Version != 2 || v2.Status != core.PlanPending || v2.EditedBy != "terminal:local" || v2.ApprovalID == "" ||
		v2.ApprovalID == v1.ApprovalID || s.PlanID != v2.ID || s.ApprovalID != v2.ApprovalID {
		t.Errorf("v2 = %+v, session %+v", v2, s)
	}
	if got := v2.Body.Steps[len(v2.Body.Steps)-1]; got.Text != "Proofread the changelog" || len(got.AcceptanceCriteria) != 1 {
		t.Errorf("last step %+v", got)
	}
	evs := h.events("main")
	if tail := evs[len(evs)-2:]; tail[0] != core.EventSuperseded || tail[1] != core.EventProposed {
		t.Errorf("events end with %v", tail)
	}
	var plan *core.Reply
	for i, r := range replies {
		if r.Kind == core.ReplyPlan {
			plan = &replies[i]
		}
	}
	if plan == nil {
		t.Fatalf("no plan reply:\n%s", joinTexts(replies))
	}
	mustContain(t, plan.Text, "Plan v2 — Docs (3 steps), edited by local", "Changes from v1: + Proofread the changelog",
		"(v1 is superseded.)", "It still needs a decision: /plan accept")
	if len(plan.Buttons) == 0 || plan.Buttons[0].Action.ApprovalID != v2.ApprovalID || len(plan.Attachments) != 1 {
		t.Errorf("plan reply buttons %+v attachments %+v", plan.Buttons, plan.Attachments)
	}
	data, err := os.ReadFile(v2.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(data), "Version 2 · status: pending", "## Changes from v1\n\n- Added: Proofread the changelog\n")

	// The old version's button is stale; the edited version is decided like any other,
	// and its file keeps the changes section when it is rewritten.
	if r := h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: v1.ApprovalID}); !strings.Contains(lastText(r), "superseded by v2") {
		t.Errorf("stale accept: %q", lastText(r))
	}
	h.say("main", "local", "/plan accept")
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.plan(v2.ID).Status; got != core.PlanAccepted && got != core.PlanCompleted {
		t.Errorf("v2 is %s after accept", got)
	}
	data, _ = os.ReadFile(v2.File)
	mustContain(t, string(data), "## Changes from v1\n\n- Added: Proofread the changelog\n", "## Decision")
}

// Every refusal is one notice and changes nothing: no plan row, no event, the same session row.
func TestEditRefusals(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.EditHints = map[string]string{"terminal": "/plan edit PATH"} })
	h.toPending("main", "Docs")
	good := editedCopy(t, h, "main", "")
	withText := func(name, mime, text string) core.File { return core.File{Name: name, MIME: mime, Data: []byte(text)} }
	plain := string(good.Data)
	for _, tc := range []struct {
		name  string
		files []core.File
		want  string
	}{
		{"no file", nil, "Send the edited copy of plan v1's file: /plan edit PATH. /plan show sends the file again."},
		{"broken checklist", []core.File{withText("e.md", "", strings.Replace(plain, "- [ ] First step", "- First step", 1))},
			"I could not read the edited plan: line "},
		{"not utf-8", []core.File{withText("e.md", "text/markdown", strings.Replace(plain, "First step", "First \xff step", 1))},
			"is not valid UTF-8 text; save the file as UTF-8"},
		{"declared too big", []core.File{{Name: "big.md", MIME: "text/markdown", Size: 300 << 10}}, `"big.md" is 300 KB; an edited plan file may be at most 256 KB`},
		{"downloaded too big", []core.File{withText("big.md", "text/markdown", plain+strings.Repeat("x", 256<<10))}, "may be at most 256 KB"},
		{"not text", []core.File{withText("shot.png", "image/png", plain)}, `"shot.png" is not a text file`},
		{"unchanged", []core.File{good}, "The edited plan is the same as the current one. Nothing changed."},
		{"ticked boxes only", []core.File{withText("e.md", "", strings.Replace(plain, "- [ ] First step", "- [x] First step", 1))},
			"The edited plan is the same as the current one."},
		{"other version", []core.File{withText("e.md", "", strings.Replace(plain, "Version 1 ·", "Version 7 ·", 1))},
			`"e.md" is plan v7, but Plan v1 "Docs" is the pending one`},
		{"judge", []core.File{withText("e.md", "", strings.Replace(plain, "- [ ] Second step", "- [ ] First step", 1))},
			"The edited plan is not valid:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, plans, events := h.session("main"), len(h.plans("main")), len(h.events("main"))
			replies := h.sayFiles("main", "local", "/plan edit", tc.files...)
			if len(replies) != 1 || replies[0].Kind != core.ReplyNotice || !strings.Contains(replies[0].Text, tc.want) {
				t.Fatalf("replies %+v, want one notice containing %q", replies, tc.want)
			}
			if after := h.session("main"); after.Version != before.Version || after.PlanID != before.PlanID || after.ApprovalID != before.ApprovalID {
				t.Errorf("the session changed: %+v -> %+v", before, after)
			}
			if n := len(h.plans("main")); n != plans {
				t.Errorf("%d plans, want %d", n, plans)
			}
			if n := len(h.events("main")); n != events {
				t.Errorf("%d events, want %d", n, events)
			}
		})
	}
}

// Only approvers may edit; the refusal is audited like any unauthorized decision, and
// editing is refused outside awaiting_approval with the phase named.
func TestEditWhoAndWhen(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.Approvers = []string{"terminal:local", "terminal:alice"} })
	h.toPending("main", "Docs")
	plans := len(h.plans("main"))
	r := h.sayFiles("main", "bob", "/plan edit", editedCopy(t, h, "main", "- [ ] Sneak in a step"))
	if len(r) != 1 || r[0].Kind != core.ReplyNotice || !strings.Contains(r[0].Text, "bob") {
		t.Fatalf("unauthorized edit: %+v", r)
	}
	if n := len(h.plans("main")); n != plans {
		t.Errorf("an unauthorized edit made a plan")
	}
	if evs := h.events("main"); evs[len(evs)-1] != core.EventRefused {
		t.Errorf("events end with %v, want refused", evs[len(evs)-1])
	}
	r = h.sayFiles("main", "alice", "/plan edit", editedCopy(t, h, "main", "- [ ] A step alice wants"))
	if s := h.session("main"); len(h.plans("main")) != plans+1 || s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("alice's edit: %s", joinTexts(r))
	}
	if p := h.plans("main")[plans]; p.EditedBy != "terminal:alice" {
		t.Errorf("EditedBy %q", p.EditedBy)
	}

	h2 := newHarness(t)
	h2.toExecuting("main", "Running")
	r = h2.sayFiles("main", "local", "/plan edit", editedCopy(t, h2, "main", ""))
	if len(r) != 1 || !strings.Contains(r[0].Text, "already accepted and being carried out (phase: executing)") {
		t.Errorf("edit while executing: %+v", r)
	}
}

// An edited file naming something that is not an MCP tool in "Allowed tools:" (it would
// allow nothing yet read as if it did) is refused: no new version is stored. (Direction
// overrides are stripped by the parser; the judge refuses them in agent proposals.)
func TestEditRefusesBadAllowedTools(t *testing.T) {
	for _, tool := range []string{"run_command", "write_file"} {
		h := newHarness(t)
		h.toPending("main", "Docs")
		file := editedCopy(t, h, "main", "")
		file.Data = []byte(strings.Replace(string(file.Data), "\n---\n", "\n## Scope\n\nAllowed:\n- docs/**\n\nAllowed tools:\n- "+tool+"\n\n---\n", 1))
		plans := len(h.plans("main"))
		r := h.sayFiles("main", "local", "/plan edit", file)
		if n := len(h.plans("main")); n != plans {
			t.Errorf("allowed tool %q: %d plans stored, want %d; replies:\n%s", tool, n, plans, joinTexts(r))
		}
		if len(r) != 1 || !strings.Contains(r[0].Text, "scope.allowed_tools") {
			t.Errorf("allowed tool %q: replies %s", tool, joinTexts(r))
		}
	}
}

// TestEditRacesABareAccept: an edit and a bare /plan accept typed while v1 was on screen
// queue up behind a running turn; the accept was meant for v1, so it must not accept the
// edited v2 (which widens the scope) that was handled between them.
func TestEditRacesABareAccept(t *testing.T) {
	h := newHarness(t, func(c *core.Config) { c.Approvers = []string{"terminal:local", "terminal:alice"} })
	sid := sessionID("main")
	h.toPending("main", "Docs")
	file := editedCopy(t, h, "main", "")
	file.Data = []byte(strings.Replace(string(file.Data), "\n---\n", "\n## Scope\n\nAllowed:\n- **\n\n---\n", 1))
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.model.Hook(func(req core.ModelRequest) {
		if strings.Contains(lastUser(req), "hold on") {
			once.Do(func() { close(started); <-release })
		}
	})
	h.model.push(sid, calls())
	comment := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "hold on"})
	<-started
	edit := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "alice"}, Text: "/plan edit", Attachments: []core.File{file}})
	accept := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan accept"})
	close(release)
	for _, done := range []<-chan error{comment, edit, accept} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	s := h.session("main")
	p := h.plan(s.PlanID)
	if p.Version != 2 || p.Status != core.PlanPending || s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("after edit + accept: v%d %s, phase %s; replies:\n%s", p.Version, p.Status, s.Phase, joinTexts(h.out.all()))
	}
}
