package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// TestPlanCopyOnDisk replays the plan_copy transcript through `plangate chat` and looks
// at the disk afterwards: PLAN.md is byte for byte the plan file (the agent's write, edit,
// replace and run_command attempts changed nothing), PLAN.json shows the completed plan,
// and the agent's in-scope write happened. With plan_mode.workspace_copy: false plangate
// writes neither, and the names are ordinary files the agent may write.
func TestPlanCopyOnDisk(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("testdata", "chat", "plan_copy", "script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(filepath.Join("testdata", "chat", "plan_copy", "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join("testdata", "chat", "plan_copy", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	chat := func(t *testing.T, extra string) string {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(string(base)+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		e := procEnv{stdin: bytes.NewReader(input), stdout: &stdout, stderr: &stderr, now: func() time.Time { return fixedNow },
			getenv: func(k string) string {
				return map[string]string{"SCRIPT": script, "SEED": demoSeed(t)}[k]
			}}
		if code := run(context.Background(), []string{"chat", "--config", cfg}, e); code != 0 {
			t.Fatalf("plangate chat exited %d: %s", code, stderr.String())
		}
		return dir
	}

	dir := chat(t, "")
	ws := filepath.Join(dir, "workspace", "main")
	md, err := os.ReadFile(filepath.Join(ws, core.PlanCopyMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	planFile, err := os.ReadFile(filepath.Join(dir, "plans", "main", "plan-2026-11-30-guide-notes-v1.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, planFile) {
		t.Fatalf("PLAN.md differs from the plan file:\n%s\n---\n%s", md, planFile)
	}
	if !strings.Contains(string(md), "status: completed") || strings.Contains(string(md), "My own plan") {
		t.Fatalf("PLAN.md:\n%s", md)
	}
	var doc core.PlanDocument
	js, err := os.ReadFile(filepath.Join(ws, core.PlanCopyJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("PLAN.json: %v\n%s", err, js)
	}
	if doc.Format != core.PlanCopyFormat || doc.Status != core.PlanCompleted || doc.Title != "Guide notes" ||
		len(doc.Steps) != 1 || doc.Steps[0].Status != plan.StepCompleted || doc.Decision == nil || doc.Decision.By != "local" {
		t.Fatalf("PLAN.json: %+v", doc)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "docs", "notes.md")); err != nil || string(b) != "Notes.\n" {
		t.Fatalf("docs/notes.md = %q, %v", b, err)
	}

	off := filepath.Join(chat(t, "plan_mode: {workspace_copy: false}\n"), "workspace", "main")
	// Unprotected and never written by plangate, the names are the workspace's own files:
	// the agent's write and then its command went through (the command rewrote PLAN.md
	// and deleted PLAN.json).
	if b, err := os.ReadFile(filepath.Join(off, "PLAN.md")); err != nil || string(b) != "# My own plan\n" {
		t.Errorf("with workspace_copy off, PLAN.md = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(off, "PLAN.json")); err == nil {
		t.Error("with workspace_copy off, the command's rm of PLAN.json did not happen")
	}
}
