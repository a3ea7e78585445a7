package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/core/tools"
)

// The report of a completed or stopped plan, against the real sandbox, the store and the
// files on disk.

// reportHarness is an engine with the real tools in the bwrap sandbox (sh allowed,
// baselines kept, checks run) and chat "main" awaiting a decision on a plan over the
// whole workspace with steps, verification and budget; files are in the workspace before
// the proposal.
func reportHarness(t *testing.T, files map[string]string, steps []string, verification []any, budget map[string]any) (*harness, core.Plan) {
	t.Helper()
	if err := tools.CheckSandbox("", false); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot start and CI=true: %v", err)
		}
		t.Skipf("no command sandbox here: %v", err)
	}
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
	tb := tools.New(tools.Config{RunCommand: true, Allow: []string{"sh", "test"}, Sandbox: tools.SandboxBwrap, ProtectPlanCopy: true,
		Baselines: filepath.Join(h.dir, "plans", ".plangate-baselines"), Hidden: []string{filepath.Join(h.dir, "plans")}})
	h.tools, h.checks = tb, tb
	h.open()
	h.writeWS("main", files)
	h.say("main", "local", "/plan on")
	scope := map[string]any{"allowed_paths": []string{"**"}}
	for k, v := range budget {
		scope[k] = v
	}
	var ss []stepArg
	for _, s := range steps {
		ss = append(ss, stepArg{Step: s})
	}
	h.model.push(sessionID("main"), calls(call("exit_plan_mode", map[string]any{"title": "Reported", "plan": ss,
		"verification": verification, "scope": scope})))
	h.say("main", "local", "make a plan")
	s := h.session("main")
	if s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("setup: phase %s; replies:\n%s\ntool results: %q", s.Phase, joinTexts(h.out.all()), toolResults(t, h, "main", "exit_plan_mode"))
	}
	return h, h.plan(s.PlanID)
}

func runCall(script string) step {
	return calls(call("run_command", map[string]any{"argv": []string{"sh", "-c", script}}))
}

func cancelStep(stepText, why string, others ...stepArg) core.ToolCall {
	return call("update_plan", map[string]any{"plan": append(others, stepArg{Step: stepText, Status: "cancelled"}), "merge": true, "explanation": why})
}

// diskLines is a file's lines added and removed from before to the file on disk now,
// counted as multisets of lines (each edit here changes whole distinct lines, so this is
// the line diff without computing one).
func diskLines(t *testing.T, path, before string) (added, removed int) {
	t.Helper()
	now := ""
	if b, err := os.ReadFile(path); err == nil {
		now = string(b)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	count := func(s string) map[string]int {
		m := map[string]int{}
		for l := range strings.Lines(s) {
			m[l]++
		}
		return m
	}
	b, a := count(before), count(now)
	for l, n := range a {
		added += max(0, n-b[l])
	}
	for l, n := range b {
		removed += max(0, n-a[l])
	}
	return added, removed
}

// A scripted agent writes a file, appends to one through a command, edits it, deletes
// another through a command that exits 3, cancels a step and completes; plangate's check
// passes. The report posted at completion (chat line, file, store, PLAN.json) lists every
// file with the lines the disk shows changed, grouped by the step in progress, the commands
// with their exit codes, the check, the cancelled step with its reason, nothing outside the
// plan, and the fingerprints before (the acceptance's) and after (the workspace as it is);
// after a restart the stored report is the same.
func TestReportAfterScriptedRun(t *testing.T) {
	before := map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "x\ny\n", "keep.txt": "kept\n"}
	h, p := reportHarness(t, before, []string{"Write the new file", "Edit and delete", "Polish"},
		[]any{map[string]any{"name": "new file", "argv": []string{"test", "-f", "new.txt"}}}, nil)
	h.model.push(sessionID("main"),
		calls(update(stepArg{Step: "Write the new file", Status: "in_progress"})),
		writeCall("new.txt", "a\nb\nc\n"),
		runCall("printf 'four\\n' >> a.txt"),
		calls(update(stepArg{Step: "Write the new file", Status: "completed"}, stepArg{Step: "Edit and delete", Status: "in_progress"})),
		calls(call("edit_file", map[string]any{"path": "a.txt", "old": "two\n", "new": "TWO\n"})),
		runCall("rm gone.txt; exit 3"),
		calls(cancelStep("Polish", "nothing left to polish", stepArg{Step: "Edit and delete", Status: "completed"})),
		text("All done."))
	got := joinTexts(h.say("main", "local", "/plan accept"))
	mustContain(t, got, "Finished plan v1: 2 of 3 steps completed, 1 cancelled",
		"Report of plan v1: 3 files changed (+5 −3), 2 commands, verification passed, 1 step not done, nothing outside the plan, tokens not reported.",
		"All done.")

	stored := h.plan(p.ID)
	if stored.Status != core.PlanCompleted {
		t.Fatalf("status %s", stored.Status)
	}
	r := stored.Run.Report
	if r == nil {
		t.Fatal("no report stored on the version")
	}
	ws := h.wsDir("main")

	// Every file, against the disk.
	wantFiles := map[string]plan.ChangeKind{"new.txt": plan.FileAdded, "a.txt": plan.FileChanged, "gone.txt": plan.FileRemoved}
	if len(r.Files) != len(wantFiles) {
		t.Fatalf("files %+v, want %v", r.Files, wantFiles)
	}
	for _, f := range r.Files {
		add, del := diskLines(t, filepath.Join(ws, f.Path), before[f.Path])
		if !f.Counted || f.Added != add || f.Removed != del || f.Kind != wantFiles[f.Path] {
			t.Errorf("%s in the report: %+v; the disk says +%d −%d, %s", f.Path, f, add, del, wantFiles[f.Path])
		}
		_, err := os.Lstat(filepath.Join(ws, f.Path))
		if exists := err == nil; exists != (f.Kind != plan.FileRemoved) {
			t.Errorf("%s is %s in the report, exists on disk: %v", f.Path, f.Kind, exists)
		}
	}

	// By step: what each step's calls did.
	type line struct {
		path           string
		added, removed int
	}
	byStep := map[string][]line{}
	cmds := map[string][]string{}
	for _, s := range r.Steps {
		for _, f := range s.Files {
			byStep[s.Text] = append(byStep[s.Text], line{f.Path, f.Added, f.Removed})
		}
		for _, c := range s.Commands {
			code := "none"
			if c.ExitCode != nil {
				code = fmt.Sprint(*c.ExitCode)
			}
			cmds[s.Text] = append(cmds[s.Text], c.Command+" => "+code)
		}
	}
	want := map[string][]line{
		"Write the new file": {{"new.txt", 3, 0}, {"a.txt", 1, 0}},
		"Edit and delete":    {{"a.txt", 1, 1}, {"gone.txt", 0, 2}},
	}
	for step, lines := range want {
		if !slices.Equal(byStep[step], lines) {
			t.Errorf("step %q: files %v, want %v", step, byStep[step], lines)
		}
	}
	if len(byStep["Polish"]) != 0 || len(r.Steps) != 3 {
		t.Errorf("steps %+v", r.Steps)
	}
	wantCmds := map[string][]string{
		"Write the new file": {"sh -c printf 'four\\n' >> a.txt => 0"},
		"Edit and delete":    {"sh -c rm gone.txt; exit 3 => 3"},
	}
	for step, cs := range wantCmds {
		if !slices.Equal(cmds[step], cs) {
			t.Errorf("step %q: commands %q, want %q", step, cmds[step], cs)
		}
	}
	if v := r.Verification; v == nil || !v.Passed || len(v.Runs) != 1 || v.Runs[0].ExitCode != 0 {
		t.Errorf("verification %+v", r.Verification)
	}
	if len(r.NotDone) != 1 || r.NotDone[0].Text != "Polish" || r.NotDone[0].Reason != "nothing left to polish" {
		t.Errorf("not done %+v", r.NotDone)
	}
	if len(r.Outside) != 0 || r.Outcome != "completed" || !r.At.Equal(stored.UpdatedAt) {
		t.Errorf("outside %v, outcome %s, at %v (plan updated %v)", r.Outside, r.Outcome, r.At, stored.UpdatedAt)
	}

	// The fingerprints: before is what the acceptance checked, after the disk now.
	now, err := h.tools.(core.Fingerprinter).Fingerprint(t.Context(), core.Workspace{SessionID: sessionID("main"), Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	if r.Before == nil || r.Before.Hash != stored.Run.Tree.Hash || r.Before.Files != 3 || r.After == nil || r.After.Hash != now.Hash || r.After.Files != 3 {
		t.Errorf("before %+v (accepted on %s), after %+v (disk %s)", r.Before, stored.Run.Tree.Hash, r.After, now.Hash)
	}

	// The file posted, beside the plan file, says the same.
	var att *core.File
	for _, rep := range h.out.all() {
		if rep.Kind == core.ReplyReport && len(rep.Attachments) == 1 {
			att = &rep.Attachments[0]
		}
	}
	if att == nil || att.Path != strings.TrimSuffix(stored.File, ".md")+"-report.md" {
		t.Fatalf("report attachment %+v (plan file %s)", att, stored.File)
	}
	md := string(readFile(t, att.Path))
	if md != string(r.Markdown(stored.Version, stored.Body.Title)) {
		t.Errorf("the report file is not the stored report:\n%s", md)
	}
	mustContain(t, md, "### [x] 1. Write the new file\n\n- new.txt: +3 −0 (added)\n- a.txt: +1 −0\n- ran sh -c printf 'four\\\\n' \\>\\> a.txt — exit code 0\n",
		"- gone.txt: +0 −2 (removed)\n", "exit 3 — exit code 3\n",
		"## Files changed\n\n- new.txt: +3 −0 (added)\n- a.txt: +2 −1\n- gone.txt: +0 −2 (removed)\n\nIn all: 3 files, +5 −3 lines.\n",
		"- new file: exit 0\n", "- 3. Polish — cancelled: nothing left to polish\n",
		"## Outside the accepted version\n\nNone.\n", "- before (accepted): "+stored.Run.Tree.Hash[:12]+", 3 files", "- after: "+now.Hash[:12]+", 3 files")

	// PLAN.json carries it.
	var doc struct {
		Report *plan.Report `json:"report"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(ws, "PLAN.json")), &doc); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(doc.Report)
	b, _ := json.Marshal(r)
	if string(a) != string(b) {
		t.Errorf("PLAN.json report\n%s\nstored\n%s", a, b)
	}

	// After a restart the stored report is the same.
	h.restart()
	again := h.plan(p.ID)
	c, _ := json.Marshal(again.Run.Report)
	if string(c) != string(b) {
		t.Errorf("after a restart the report is\n%s\nwas\n%s", c, b)
	}
}

// A plan stopped by its budget reports the steps it did not do: the one cancelled before,
// with its reason, and the ones left open, with the stop; the file that went over is in
// the report with its lines.
func TestReportOfStoppedPlan(t *testing.T) {
	h, p := reportHarness(t, map[string]string{"a.txt": "a\n"}, []string{"Change a", "Change b", "Change c"}, nil,
		map[string]any{"max_files_changed": 1})
	h.model.push(sessionID("main"),
		calls(cancelStep("Change c", "c is out of date", stepArg{Step: "Change a", Status: "in_progress"})),
		writeCall("a.txt", "a\nmore\n"),
		writeCall("b.txt", "b\n"),
		writeCall("c.txt", "never\n"))
	rs := h.say("main", "local", "/plan accept")
	if last := lastText(rs); !strings.HasPrefix(last, "Stopped: 2 files changed") {
		t.Errorf("the stop notice, which says what a person can do, is not the last word: %q", last)
	}
	got := joinTexts(rs)
	mustContain(t, got, "Stopped: 2 files changed", "Report of plan v1, stopped (max files changed exceeded): 2 files changed (+2 −0), 0 commands, 3 steps not done, nothing outside the plan, tokens not reported.")
	stored := h.plan(p.ID)
	r := stored.Run.Report
	if r == nil || r.Outcome != string(plan.StopMaxFilesChanged) || !r.At.Equal(stored.Run.Stop.At) {
		t.Fatalf("report %+v, stop %+v", r, stored.Run.Stop)
	}
	wantNotDone := []plan.NotDone{
		{Step: "1", Text: "Change a", Status: plan.StepInProgress, Reason: "the execution stopped (max_files_changed_exceeded) before it was done"},
		{Step: "2", Text: "Change b", Status: plan.StepPending, Reason: "the execution stopped (max_files_changed_exceeded) before it was done"},
		{Step: "3", Text: "Change c", Status: plan.StepCancelled, Reason: "c is out of date"},
	}
	if !slices.Equal(r.NotDone, wantNotDone) {
		t.Errorf("not done %+v\nwant %+v", r.NotDone, wantNotDone)
	}
	if len(r.Files) != 2 || r.Files[0] != (plan.FileLines{Path: "a.txt", Kind: plan.FileChanged, Added: 1, Counted: true}) ||
		r.Files[1] != (plan.FileLines{Path: "b.txt", Kind: plan.FileAdded, Added: 1, Counted: true}) {
		t.Errorf("files %+v", r.Files)
	}
	if h.exists("main", "c.txt") {
		t.Error("c.txt was written after the stop")
	}
	md := string(readFile(t, strings.TrimSuffix(stored.File, ".md")+"-report.md"))
	mustContain(t, md, "Stopped at 2026-11-30", "max files changed exceeded",
		"- 1. Change a — in_progress: the execution stopped (max_files_changed_exceeded) before it was done\n",
		"- 3. Change c — cancelled: c is out of date\n")
}
