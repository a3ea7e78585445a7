package engine_test

import (
	"encoding/json"
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

// Verification run by plangate, against the real command sandbox (bwrap), the store and
// the files on disk, with a hostile scripted model.

// checkedHarness is a harness whose plans' command checks run in the real sandbox.
func checkedHarness(t *testing.T, mutate ...func(*engine.Config)) *harness {
	t.Helper()
	if err := tools.CheckSandbox("", false); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot start and CI=true: %v", err)
		}
		t.Skipf("no command sandbox here: %v", err)
	}
	h := newHarness(t, append([]func(*engine.Config){func(c *engine.Config) { c.WorkspaceCopy = true }}, mutate...)...)
	tb := tools.New(tools.Config{RunCommand: true, Allow: []string{"false", "true", "sh"}, ProtectPlanCopy: true})
	h.tools, h.checks = tb, tb
	h.open()
	return h
}

// proposeChecked is an exit_plan_mode call whose verification has the given entries.
func proposeChecked(title string, verification []any, steps ...stepArg) core.ToolCall {
	return call("exit_plan_mode", map[string]any{"title": title, "plan": steps, "verification": verification,
		"scope": map[string]any{"allowed_paths": []string{"status.txt"}}})
}

// toolResults are the results of the named tool in chat's stored transcript, in order.
func toolResults(t *testing.T, h *harness, chat, name string) []string {
	t.Helper()
	msgs, err := h.st.Transcript(t.Context(), sessionID(chat), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Role == core.RoleTool && m.Name == name {
			out = append(out, m.Content)
		}
	}
	return out
}

// A model that marks every step completed while the check fails never completes the plan:
// each attempt is run, stored and handed back with its exit code and output, and after
// retry_policy.max_verifier_retries (2) retries the turn stops with verification_failed.
// A person's answer lets it try again, counted afresh.
func TestVerificationFailingCheckNeverCompletes(t *testing.T) {
	h := checkedHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeChecked("Checked", []any{
		map[string]any{"argv": []string{"false"}, "name": "always fails"},
		"The README reads well",
	}, stepArg{Step: "First step"}, stepArg{Step: "Second step"})))
	rs := h.say("main", "local", "plan it")
	p := h.plan(h.session("main").PlanID)
	mustContain(t, joinTexts(rs), "Checks plangate runs before done: always fails (false)")
	file, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "## Verification\n\n"+plan.CommandsNote+"\n\n- always fails: `false`\n- The README reads well\n")

	done := update(stepArg{Step: "First step", Status: "completed"}, stepArg{Step: "Second step", Status: "completed"})
	for range 4 { // one more than the turn may use: the stop must come first
		h.model.push(sid, calls(done))
	}
	rs = h.say("main", "local", "/plan accept")
	mustContain(t, lastText(rs), "Stopped: plan v1 failed its verification 3 times in a row (always fails: exit 1; retry_policy.max_verifier_retries is 2)",
		"/plan revise <feedback>")

	got := h.plan(p.ID)
	if got.Status != core.PlanAccepted || h.session("main").Phase != core.PhaseExecuting {
		t.Fatalf("plan %s, phase %s: a plan whose check fails was completed", got.Status, h.session("main").Phase)
	}
	for _, st := range got.Body.Steps {
		if st.Status == plan.StepCompleted {
			t.Errorf("step %q is stored completed though its plan's check failed", st.Text)
		}
	}
	v := got.Run.Verification
	if v == nil || v.Attempts != 3 || v.Failures != 3 || v.Passed || len(v.Runs) != 1 ||
		v.Runs[0].ExitCode != 1 || v.Runs[0].Name != "always fails" || !slices.Equal(v.Runs[0].Argv, []string{"false"}) {
		t.Fatalf("stored verification %+v, want 3 failed attempts of false (exit 1)", v)
	}
	if got.Run.Stop == nil || got.Run.Stop.Kind != plan.StopVerificationFailed {
		t.Fatalf("stored stop %+v, want verification_failed", got.Run.Stop)
	}
	kinds := h.events("main")
	if countKind(kinds, core.EventVerification) != 3 || countKind(kinds, core.EventStopped) != 1 || countKind(kinds, core.EventCompleted) != 0 {
		t.Fatalf("audit rows %v, want 3 verification, 1 stopped, no completed", kinds)
	}
	res := toolResults(t, h, "main", "update_plan")
	if len(res) != 3 {
		t.Fatalf("%d update_plan results, want 3 (the fourth call is never made): %q", len(res), res)
	}
	mustContain(t, res[0], "error: plan v1 is not complete", "1 of 1 checks failed", "$ false\nexit 1", "2 attempts left")
	mustContain(t, res[1], "1 attempt left")
	mustContain(t, res[2], "That was the last attempt")

	// Every place a person reads the plan shows the runs.
	file, err = os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "## Verification runs\n\n- Attempt 3: 1 of 1 checks failed\n- [ ] always fails — exit 1\n")
	if back, err := plan.ParseMarkdown(file); err != nil || !slices.EqualFunc(back.Verification, got.Body.Verification, plan.Check.Equal) {
		t.Fatalf("the plan file reads back as %+v, %v; want the verification %+v", back.Verification, err, got.Body.Verification)
	}
	var doc engine.PlanDocument
	data, err := os.ReadFile(filepath.Join(h.cfg.WorkspaceRoot, "main", "PLAN.json"))
	if err != nil || json.Unmarshal(data, &doc) != nil {
		t.Fatalf("PLAN.json: %v\n%s", err, data)
	}
	if doc.VerificationRuns == nil || doc.VerificationRuns.Attempts != 3 || !doc.Verification[0].IsCommand() {
		t.Fatalf("PLAN.json verification %+v, runs %+v", doc.Verification, doc.VerificationRuns)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan status")), "verification: attempt 3: 1 of 1 checks failed (always fails: exit 1)")

	// A person answers: the agent may try again (the fourth call, left over), and the
	// count starts afresh.
	h.model.push(sid, text("still failing"))
	h.say("main", "local", "try once more")
	got = h.plan(p.ID)
	if v := got.Run.Verification; v.Attempts != 4 || v.Failures != 1 || got.Run.Stop != nil || got.Status != core.PlanAccepted {
		t.Fatalf("after a person's answer: verification %+v, stop %+v, status %s", v, got.Run.Stop, got.Status)
	}
}

// A model that claims acceptance criteria it did not check gets no completion while the
// workspace's test script fails; once it fixes the file, plangate's run passes and the
// plan completes, its passing run stored.
func TestVerificationPassingRunCompletesThePlan(t *testing.T) {
	h := checkedHarness(t)
	sid := sessionID("main")
	ws := filepath.Join(h.cfg.WorkspaceRoot, "main")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "grep -qx fixed status.txt 2>/dev/null || { echo 'status.txt is not fixed'; exit 3; }\n"
	if err := os.WriteFile(filepath.Join(ws, "check.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeChecked("Fix status", []any{map[string]any{"argv": []string{"sh", "check.sh"}}},
		stepArg{Step: "Fix the status", AcceptanceCriteria: []string{"status.txt says fixed"}})))
	h.say("main", "local", "plan it")
	p := h.plan(h.session("main").PlanID)

	claim := update(stepArg{Step: "Fix the status", Status: "completed", VerifiedCriteria: []string{"status.txt says fixed"}})
	h.model.push(sid, calls(claim), text("I am done."))
	h.say("main", "local", "/plan accept")
	got := h.plan(p.ID)
	if got.Status != core.PlanAccepted || got.Run.Verification == nil || got.Run.Verification.Runs[0].ExitCode != 3 {
		t.Fatalf("after a claim without the fix: status %s, verification %+v", got.Status, got.Run.Verification)
	}
	if tail := got.Run.Verification.Runs[0].Tail; !strings.Contains(tail, "status.txt is not fixed") {
		t.Fatalf("stored tail %q, want the script's output", tail)
	}
	if got.Body.Steps[0].Status == plan.StepCompleted || len(got.Body.Steps[0].VerifiedCriteria) != 0 {
		t.Fatalf("the unverified claim was stored: %+v", got.Body.Steps[0])
	}
	mustContain(t, toolResults(t, h, "main", "update_plan")[0], "$ sh check.sh\nexit 3\nstatus.txt is not fixed")

	h.model.push(sid,
		calls(call("write_file", map[string]any{"path": "status.txt", "content": "fixed\n"})),
		calls(claim), text("Fixed."))
	rs := h.say("main", "local", "fix it")
	got = h.plan(p.ID)
	v := got.Run.Verification
	if got.Status != core.PlanCompleted || v == nil || !v.Passed || v.Attempts != 2 || v.Failures != 0 || v.Runs[0].ExitCode != 0 || got.Run.Stop != nil {
		t.Fatalf("after the fix: status %s, verification %+v, stop %+v", got.Status, v, got.Run.Stop)
	}
	mustContain(t, joinTexts(rs), "Done: 1 of 1 steps. Plan v1 completed.")
	kinds := h.events("main")
	if countKind(kinds, core.EventVerification) != 2 || countKind(kinds, core.EventCompleted) != 1 {
		t.Fatalf("audit rows %v", kinds)
	}
	file, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "- Attempt 2: all 1 checks passed\n- [x] sh check.sh — exit 0\n")
}

// A verification command the gateway could never run, or a shell string, is refused when
// proposed, with what to send instead; nothing is stored. A plan without verification
// says in its file that plangate runs no checks.
func TestVerificationRefusedAtProposal(t *testing.T) {
	h := checkedHarness(t)
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid,
		calls(proposeChecked("Bad", []any{map[string]any{"argv": []string{"curl", "https://example.invalid"}}}, stepArg{Step: "One"})),
		calls(proposeChecked("Bad", []any{map[string]any{"argv": []string{"go test ./..."}}}, stepArg{Step: "One"})),
		calls(proposeChecked("Bad", []any{map[string]any{"argv": []string{"sh", "-c", "true"}}}, stepArg{Step: "One"})),
		calls(proposeChecked("Bad", []any{map[string]any{"argv": []string{}, "cmd": "x"}}, stepArg{Step: "One"})),
		calls(proposeChecked("Plain", nil, stepArg{Step: "One"})))
	h.say("main", "local", "plan it")
	res := toolResults(t, h, "main", "exit_plan_mode")
	if len(res) != 5 {
		t.Fatalf("%d results: %q", len(res), res)
	}
	mustContain(t, res[0], "verification 1 (curl https://example.invalid) cannot run", `"curl" is not an allowed program`)
	mustContain(t, res[1], "is a shell string; there is no shell")
	mustContain(t, res[2], "runs sh -c, a shell string")
	mustContain(t, res[3], `unknown field "cmd" in verification[0]`)
	ps := h.plans("main")
	if len(ps) != 1 || ps[0].Body.Title != "Plain" {
		t.Fatalf("stored plans %+v, want only the plain one", ps)
	}
	file, err := os.ReadFile(ps[0].File)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(file), "## Verification\n\n"+plan.NoVerificationNote+"\n")
}

// A person who edits the plan file may add a command check, read back exactly; one the
// gateway could never run is refused with the reason, and nothing changes.
func TestVerificationEditedIntoTheFile(t *testing.T) {
	h := checkedHarness(t)
	h.toPending("main", "Docs")
	p := h.plan(h.session("main").PlanID)
	data, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(line string) core.File {
		text := strings.Replace(string(data), plan.NoVerificationNote+"\n", line+"\n", 1)
		return core.File{Name: "edited.md", MIME: "text/markdown", Data: []byte(text)}
	}
	rs := h.sayFiles("main", "local", "/plan edit", edit("- lint: `curl https://example.invalid`"))
	mustContain(t, joinTexts(rs), "The edited file was not taken: verification 1 (curl https://example.invalid) cannot run", "Nothing changed.")
	if len(h.plans("main")) != 1 {
		t.Fatalf("a refused edit stored a version")
	}
	rs = h.sayFiles("main", "local", "/plan edit", edit(`- tests: `+"`"+`["sh", "check suite.sh"]`+"`"))
	ps := h.plans("main")
	if len(ps) != 2 {
		t.Fatalf("the edit was not taken:\n%s", joinTexts(rs))
	}
	want := []plan.Check{{Name: "tests", Argv: []string{"sh", "check suite.sh"}}}
	if !slices.EqualFunc(ps[1].Body.Verification, want, plan.Check.Equal) {
		t.Fatalf("edited verification %+v, want %+v", ps[1].Body.Verification, want)
	}
	mustContain(t, joinTexts(rs), `Checks plangate runs before done: tests (sh "check suite.sh")`)
}

// With retry_policy.max_verifier_retries 0 the first failed run stops the turn.
func TestVerificationNoRetries(t *testing.T) {
	h := checkedHarness(t, func(c *engine.Config) { c.MaxVerifierRetries = engine.NoVerifierRetries })
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(proposeChecked("Once", []any{map[string]any{"argv": []string{"false"}}}, stepArg{Step: "Only step"})))
	h.say("main", "local", "plan it")
	p := h.plan(h.session("main").PlanID)
	done := update(stepArg{Step: "Only step", Status: "completed"})
	h.model.push(sid, calls(done), calls(done))
	rs := h.say("main", "local", "/plan accept")
	mustContain(t, lastText(rs), "Stopped: plan v1 failed its verification once (false: exit 1; retry_policy.max_verifier_retries is 0)")
	if got := h.plan(p.ID); got.Run.Verification.Attempts != 1 || got.Run.Stop == nil || got.Status != core.PlanAccepted {
		t.Fatalf("run %+v, status %s", got.Run, got.Status)
	}
}

// What a check writes (a build log here) is plangate's own: after a failed attempt the
// agent's next write is not stopped as a drift, and the file counts neither as a change
// of the plan nor against its budget of one file. The disk and the store show it.
func TestFilesAChecksWritesAreNeitherDriftNorBudget(t *testing.T) {
	h := checkedHarness(t)
	tb := tools.New(tools.Config{RunCommand: true, Allow: []string{"touch", "test"}, ProtectPlanCopy: true})
	h.tools, h.checks = tb, tb
	h.open()
	sid := sessionID("main")
	h.say("main", "local", "/plan on")
	h.model.push(sid, calls(call("exit_plan_mode", map[string]any{"title": "Status", "plan": []stepArg{{Step: "Write status.txt"}},
		"verification": []any{map[string]any{"name": "build", "argv": []string{"touch", "build.log"}},
			map[string]any{"name": "status written", "argv": []string{"test", "-f", "status.txt"}}},
		"scope": map[string]any{"allowed_paths": []string{"status.txt"}, "max_files_changed": 1}})))
	if rs := h.say("main", "local", "plan it"); h.session("main").Phase != core.PhaseAwaitingApproval {
		t.Fatalf("not proposed:\n%s\n%q", joinTexts(rs), toolResults(t, h, "main", "exit_plan_mode"))
	}
	p := h.plan(h.session("main").PlanID)
	done := update(stepArg{Step: "Write status.txt", Status: "completed"})
	h.model.push(sid, calls(done), calls(call("write_file", map[string]any{"path": "status.txt", "content": "ok\n"})), calls(done), text("done"))
	rs := h.say("main", "local", "/plan accept")
	got := h.plan(p.ID)
	if got.Status != core.PlanCompleted || got.Run.Stop != nil {
		t.Fatalf("plan %s, stop %+v; want completed without a stop; replies:\n%s", got.Status, got.Run.Stop, joinTexts(rs))
	}
	if v := got.Run.Verification; v == nil || v.Attempts != 2 || !v.Passed {
		t.Fatalf("verification %+v, want passed on the second attempt", v)
	}
	if ch := got.Run.Changed; ch == nil || !slices.Equal(ch.Paths, []string{"status.txt"}) || ch.Files != 1 || ch.Exceeded != "" {
		t.Fatalf("changes %+v, want status.txt only, within the budget", got.Run.Changed)
	}
	if string(readFile(t, filepath.Join(h.wsDir("main"), "status.txt"))) != "ok\n" || !fileExists(filepath.Join(h.wsDir("main"), "build.log")) {
		t.Fatal("the workspace lacks the agent's status.txt or the check's build.log")
	}
	if countKind(h.events("main"), core.EventStopped) != 0 {
		t.Error("a stop was audited")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
