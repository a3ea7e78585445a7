package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/tools"
)

// wsDir is the workspace directory of chat in the harness (per session).
func (h *harness) wsDir(chat string) string {
	return filepath.Join(h.cfg.WorkspaceRoot, addr(chat).Dir())
}

// writeWS writes files (path -> content) into chat's workspace.
func (h *harness) writeWS(chat string, files map[string]string) {
	h.t.Helper()
	for name, content := range files {
		p := filepath.Join(h.wsDir(chat), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
}

func runGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// eventsOf lists the audit rows of kind in chat.
func (h *harness) eventsOf(chat string, kind core.EventKind) []core.Event {
	h.t.Helper()
	evs, err := h.st.Events(h.t.Context(), sessionID(chat))
	if err != nil {
		h.t.Fatal(err)
	}
	var out []core.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// An acceptance is bound to the workspace the version was proposed on: after someone
// changed a file, /plan accept and the Accept button are refused with what changed (the
// plan stays pending, only a refused row is audited, no workspace copy is written), and
// /plan accept --stale accepts it, saying so in the decision, its audit row and the file.
func TestAcceptOnAChangedWorkspace(t *testing.T) {
	for _, repo := range []bool{false, true} {
		name := "plain directory"
		if repo {
			name = "git repository"
		}
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath("git"); repo && err != nil {
				t.Skip("git is not installed")
			}
			h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
			h.tools = tools.New(tools.Config{ProtectPlanCopy: true})
			h.open()
			h.writeWS("main", map[string]string{"src/a.go": "package a\n", "src/b.go": "package a\n", "README.md": "hi\n"})
			if repo {
				runGit(t, h.wsDir("main"), "init", "-q", "-b", "main")
				runGit(t, h.wsDir("main"), "add", ".")
				runGit(t, h.wsDir("main"), "commit", "-q", "-m", "one")
			}
			p := h.toPending("main", "Tidy")
			if got := h.plan(p.ID).Run.Tree; got == nil || got.Count != 3 || (repo && got.Head == "") {
				t.Fatalf("the proposed version's fingerprint is %+v, want 3 files (and HEAD in a repository)", got)
			}

			// A person edits a file and adds one between proposal and acceptance.
			h.writeWS("main", map[string]string{"src/a.go": "package a // edited by a person\n", "notes.txt": "x\n"})
			if repo {
				runGit(t, h.wsDir("main"), "commit", "-q", "-am", "two")
			}
			evsBefore := len(h.events("main"))
			r := lastText(h.say("main", "local", "/plan accept"))
			mustContain(t, r, `Plan v1 "Tidy" was not accepted: `, "notes.txt added and src/a.go changed since v1 was proposed", "/plan accept --stale")
			if repo {
				mustContain(t, r, "HEAD moved from ")
			}
			r = lastText(h.click("main", "local", core.Action{Kind: core.ActionAccept, ApprovalID: p.ApprovalID}))
			mustContain(t, r, "src/a.go changed since v1 was proposed", "/plan accept --stale")

			s, got := h.session("main"), h.plan(p.ID)
			if s.Phase != core.PhaseAwaitingApproval || got.Status != core.PlanPending || got.Decision != nil || s.ApprovalID != p.ApprovalID {
				t.Fatalf("after the refusals: phase %s, plan %s, decision %+v", s.Phase, got.Status, got.Decision)
			}
			evs := h.events("main")[evsBefore:]
			if len(evs) != 2 || evs[0] != core.EventRefused || evs[1] != core.EventRefused {
				t.Fatalf("audit rows after the refusals %v, want two refused", evs)
			}
			refused := h.eventsOf("main", core.EventRefused)
			mustContain(t, refused[len(refused)-1].Detail, "accept refused: workspace changed: ", "src/a.go changed")
			if _, err := os.Stat(filepath.Join(h.wsDir("main"), "PLAN.md")); err == nil {
				t.Fatal("a refused acceptance wrote the workspace copy")
			}

			// The approver accepts it anyway.
			r = joinTexts(h.say("main", "local", "/plan accept --stale"))
			mustContain(t, r, `Accepted plan v1 "Tidy" on a changed workspace (`, "src/a.go changed since it was proposed)")
			got = h.plan(p.ID)
			if got.Status != core.PlanAccepted && got.Status != core.PlanCompleted {
				t.Fatalf("plan %s after --stale, want accepted", got.Status)
			}
			if got.Decision == nil || !strings.Contains(got.Decision.Stale, "notes.txt added and src/a.go changed") {
				t.Fatalf("decision %+v, want it to say what changed", got.Decision)
			}
			acc := h.eventsOf("main", core.EventAccepted)
			if len(acc) != 1 || !strings.HasPrefix(acc[0].Detail, "stale: ") || !strings.Contains(acc[0].Detail, "src/a.go changed") {
				t.Fatalf("accepted rows %+v, want one saying stale and what changed", acc)
			}
			file, err := os.ReadFile(got.File)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, string(file), "Accepted on a changed workspace: ")
			if _, err := os.Stat(filepath.Join(h.wsDir("main"), "PLAN.md")); err != nil {
				t.Fatalf("no workspace copy after the acceptance: %v", err)
			}
			if got := string(readFile(t, filepath.Join(h.wsDir("main"), "src/a.go"))); got != "package a // edited by a person\n" {
				t.Fatalf("src/a.go is %q: the person's edit was lost", got)
			}
		})
	}
}

// A workspace that did not change accepts as before, and so does --stale on it (nothing
// stale to record); the plan's own copy changing is no change.
func TestAcceptOnAnUnchangedWorkspace(t *testing.T) {
	h := newHarness(t, func(c *engine.Config) { c.WorkspaceCopy = true })
	h.tools = tools.New(tools.Config{ProtectPlanCopy: true})
	h.open()
	h.writeWS("main", map[string]string{"src/a.go": "package a\n", "PLAN.md": "an old copy\n"})
	p := h.toPending("main", "Tidy")
	h.writeWS("main", map[string]string{"PLAN.md": "another old copy\n"})
	mustContain(t, joinTexts(h.say("main", "local", "/plan accept --stale")), `Accepted plan v1 "Tidy". Working on it.`)
	got := h.plan(p.ID)
	if got.Decision == nil || got.Decision.Stale != "" {
		t.Fatalf("decision %+v, want an ordinary acceptance", got.Decision)
	}
	if acc := h.eventsOf("main", core.EventAccepted); len(acc) != 1 || acc[0].Detail != "" {
		t.Fatalf("accepted rows %+v", acc)
	}
}

// When the recorded fingerprint cannot be read back (its file list is gone from the store),
// the acceptance is refused, saying why, and --stale accepts without the check.
func TestAcceptWhenTheFingerprintIsUnreadable(t *testing.T) {
	h := newHarness(t)
	h.tools = tools.New(tools.Config{})
	h.open()
	h.writeWS("main", map[string]string{"a.txt": "a\n"})
	p := h.toPending("main", "Tidy")
	tree := h.plan(p.ID).Run.Tree
	if tree == nil || tree.Packed != "" {
		t.Fatalf("stored tree %+v: want one, without its file list in the row", tree)
	}
	if v, ok, err := h.st.ChannelState(t.Context(), "plangate", "trees", tree.Hash); err != nil || !ok || v == "" {
		t.Fatalf("the file list is not kept: %q %v %v", v, ok, err)
	}
	if err := h.st.SetChannelState(t.Context(), "plangate", "trees", tree.Hash, ""); err != nil {
		t.Fatal(err)
	}
	mustContain(t, lastText(h.say("main", "local", "/plan accept")), "I could not compare the workspace with the one it was proposed on", "/plan accept --stale")
	if got := h.plan(p.ID); got.Status != core.PlanPending {
		t.Fatalf("plan %s after the refusal", got.Status)
	}
	mustContain(t, joinTexts(h.say("main", "local", "/plan accept --stale")), "on a changed workspace (not checked (")
	got := h.plan(p.ID)
	if got.Status != core.PlanAccepted && got.Status != core.PlanCompleted {
		t.Fatalf("plan %s after --stale", got.Status)
	}
	// The execution counts from the workspace it was accepted on, whose list is kept.
	if got.Run.Baseline == nil {
		t.Fatal("no baseline recorded for the unchecked acceptance")
	}
	if v, ok, err := h.st.ChannelState(t.Context(), "plangate", "trees", got.Run.Baseline.Hash); err != nil || !ok || v == "" {
		t.Fatalf("the baseline's file list is not kept: %v %v", ok, err)
	}
}
