package engine_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// /plan undo against the real sandbox, the store and the files on disk.

// diskFile is one entry of a workspace on disk: a file's content and mode, or a link's
// target.
type diskFile struct {
	content string
	mode    fs.FileMode
	link    string
}

// diskState reads every file and link under dir (directories by the files in them, and
// the plan's own copy left out) as the test sees it.
func diskState(t *testing.T, dir string) map[string]diskFile {
	t.Helper()
	out := map[string]diskFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "PLAN.md" || rel == "PLAN.json":
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = diskFile{link: target}
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out[rel] = diskFile{content: string(b), mode: fi.Mode().Perm()}
		case d.IsDir() && rel != ".":
			out[rel+"/"] = diskFile{mode: 0}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDisk(t *testing.T, what string, got, want map[string]diskFile) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[p]; !ok || g != want[p] {
			t.Errorf("%s: %s is %+v (present %v), want %+v", what, p, g, ok, want[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s is there (%+v), and should not be", what, p, got[p])
		}
	}
}

// undoRun accepts a plan whose scripted execution writes and edits files with the file
// tools and, through one command, removes a file, renames one, creates one in a new
// directory, appends to a binary file and changes a mode; it completes. It returns the
// harness, the plan and the disk at acceptance and at completion.
func undoRun(t *testing.T) (*harness, core.Plan, map[string]diskFile, map[string]diskFile) {
	t.Helper()
	h, p := reportHarness(t, map[string]string{"a.txt": "one\ntwo\n", "b.sh": "#!/bin/sh\necho b\n", "gone.txt": "bye\n",
		"old.txt": "moved\n", "bin.dat": "\x00\x01\x02binary", "keep.txt": "kept\n", "sub/x.txt": "x\n"},
		[]string{"Change everything"}, nil, nil)
	ws := h.wsDir("main")
	if err := os.Chmod(filepath.Join(ws, "b.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	accepted := diskState(t, ws)
	h.model.push(sessionID("main"),
		calls(update(stepArg{Step: "Change everything", Status: "in_progress"})),
		writeCall("new.txt", "fresh\n"),
		calls(call("edit_file", map[string]any{"path": "a.txt", "old": "two\n", "new": "TWO\n"})),
		runCall("rm gone.txt && mv old.txt renamed.txt && mkdir -p d/e && echo y > d/e/f.txt && printf '\\377' >> bin.dat && chmod 600 b.sh && rm -r sub && rm link && ln -s a.txt link"),
		calls(update(stepArg{Step: "Change everything", Status: "completed"})),
		text("All done."))
	// The mode and the link came after the proposal: the state at acceptance is the one
	// --stale accepts.
	replies := h.say("main", "local", "/plan accept --stale")
	got := joinTexts(replies)
	mustContain(t, got, "Report of plan v1:", "All done.")
	undoButton := false
	for _, r := range replies {
		if r.Kind == core.ReplyReport {
			undoButton = len(r.Buttons) == 1 && r.Buttons[0].Label == "Undo" &&
				r.Buttons[0].Action == core.Action{Kind: core.ActionUndo, ApprovalID: p.ApprovalID}
		}
	}
	if !undoButton {
		t.Fatalf("the report has no Undo button: %+v", replies)
	}
	if st := h.plan(p.ID).Status; st != core.PlanCompleted {
		t.Fatalf("status %s; replies:\n%s", st, got)
	}
	done := diskState(t, ws)
	if _, ok := done["renamed.txt"]; !ok || done["b.sh"].mode != 0o600 {
		t.Fatalf("setup: the command did not run as meant: %+v", done)
	}
	return h, h.plan(p.ID), accepted, done
}

// Undo puts every file back byte for byte with its mode: written and edited by the file
// tools; removed, renamed, created in new directories, appended to and chmodded by a
// command; a link replaced. It is recorded on the version and audited, PLAN.json has it,
// and a second undo is refused with nothing changed.
func TestUndoRestoresTheWorkspace(t *testing.T) {
	h, p, accepted, done := undoRun(t)
	ws := h.wsDir("main")

	got := joinTexts(h.say("main", "local", "/plan undo"))
	mustContain(t, got, `Undone plan v1 "Reported": 10 files put back as at acceptance (`, "removed new.txt", "restored a.txt",
		"recreated gone.txt", "removed renamed.txt", "removed d/e/f.txt", "restored bin.dat", "restored b.sh", "recreated sub/x.txt", "restored link")
	sameDisk(t, "after undo", diskState(t, ws), accepted)

	stored := h.plan(p.ID)
	u := stored.Run.Undone
	if u == nil || u.By != "local" || len(u.Files) != 10 || !u.At.Equal(h.clock) {
		t.Fatalf("undo on the version: %+v", u)
	}
	if stored.Status != core.PlanCompleted {
		t.Errorf("status %s after undo", stored.Status)
	}
	actions := map[string]plan.UndoAction{}
	for _, f := range u.Files {
		actions[f.Path] = f.Action
	}
	want := map[string]plan.UndoAction{"new.txt": plan.UndoRemoved, "a.txt": plan.UndoRestored, "gone.txt": plan.UndoRecreated,
		"old.txt": plan.UndoRecreated, "renamed.txt": plan.UndoRemoved, "d/e/f.txt": plan.UndoRemoved, "bin.dat": plan.UndoRestored,
		"b.sh": plan.UndoRestored, "sub/x.txt": plan.UndoRecreated, "link": plan.UndoRestored}
	if !maps.Equal(actions, want) {
		t.Errorf("actions %v, want %v", actions, want)
	}
	var audit []core.Event
	evs, err := h.st.Events(t.Context(), sessionID("main"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == core.EventUndone {
			audit = append(audit, e)
		}
	}
	if len(audit) != 1 || audit[0].PlanID != p.ID || audit[0].Actor != core.PersonActor("local") || !strings.Contains(audit[0].Detail, "recreated gone.txt") {
		t.Errorf("undone audit rows %+v", audit)
	}
	doc, err := os.ReadFile(filepath.Join(ws, "PLAN.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(doc), `"undo": {`, `"action": "recreated"`)

	// Twice: refused, nothing changed.
	got = joinTexts(h.say("main", "local", "/plan undo"))
	mustContain(t, got, `Plan v1 "Reported" was already undone at`, "Nothing changed.")
	sameDisk(t, "after a second undo", diskState(t, ws), accepted)
	if len(done) == len(accepted) {
		t.Errorf("the run changed nothing to undo: %v", done)
	}
}

// A file changed by someone else since the plan ended makes undo refuse, naming it;
// nothing on disk changes and the version records no undo. Someone who may not decide is
// refused before anything is looked at.
func TestUndoRefusesChangedFiles(t *testing.T) {
	h, p, _, done := undoRun(t)
	ws := h.wsDir("main")

	got := joinTexts(h.say("main", "bob", "/plan undo"))
	mustContain(t, got, "Only local, who started this conversation, can decide on plans here.")
	sameDisk(t, "after bob's undo", diskState(t, ws), done)

	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("someone else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("back by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := diskState(t, ws)
	got = joinTexts(h.click("main", "local", core.Action{Kind: core.ActionUndo, ApprovalID: p.ApprovalID}))
	mustContain(t, got, "Cannot undo plan v1: 2 files changed since the plan left them (a.txt and gone.txt). Nothing was changed")
	sameDisk(t, "after a refused undo", diskState(t, ws), changed)
	if u := h.plan(p.ID).Run.Undone; u != nil {
		t.Errorf("undo recorded: %+v", u)
	}
	if evs := h.events("main"); slices.Contains(evs, core.EventUndone) || !slices.Contains(evs, core.EventRefused) {
		t.Errorf("audit kinds %v", evs)
	}
}

// A hostile workspace cannot make undo write outside it: a directory the plan removed,
// replaced by a link to a directory outside, and a file the plan changed, replaced by a
// link to a file outside, are changed files; undo refuses and the outside is untouched.
func TestUndoStaysInTheWorkspace(t *testing.T) {
	h, _, _, _ := undoRun(t)
	ws := h.wsDir("main")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "a.txt"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "a.txt"), filepath.Join(ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	before := diskState(t, outside)
	got := joinTexts(h.say("main", "local", "/plan undo"))
	mustContain(t, got, "Cannot undo plan v1: 2 files changed since the plan left them (a.txt and sub/x.txt)")
	sameDisk(t, "outside", diskState(t, outside), before)
}

// Undo is refused while a plan waits for a decision or runs, and with nothing to undo.
func TestUndoRefusedInTheWrongState(t *testing.T) {
	h := newHarness(t)
	mustContain(t, joinTexts(h.say("main", "local", "/plan undo")), "There is no plan to undo here.")
	mustContain(t, joinTexts(h.click("main", "local", core.Action{Kind: core.ActionUndo, ApprovalID: "gone1"})), "That Undo button is no longer valid; nothing changed.")
	h.toPending("main", "Waiting")
	mustContain(t, joinTexts(h.say("main", "local", "/plan undo")), `Plan v1 "Waiting" is waiting for a decision and changed nothing yet. Decide: /plan accept`)
	h.model.push(sessionID("main"), text("Working."))
	h.say("main", "local", "/plan accept")
	mustContain(t, joinTexts(h.say("main", "local", "/plan undo")), `Plan v1 "Waiting" is still running. Wait for its report, or stop it with /plan off, then /plan undo.`)
	h.say("main", "local", "/plan off")
	mustContain(t, joinTexts(h.say("main", "local", "/plan undo")), `Plan v1 "Waiting" changed no files; there is nothing to undo.`)
}
