package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// seedNudges writes two sessions' schedules into the database the config names: s1 has a
// fired one-shot, a pending one-shot and a recurring schedule; s2 a cancelled timeout.
func seedNudges(t *testing.T, cfgPath string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(filepath.Dir(cfgPath), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := fixedNow
	for _, sid := range []string{"s1", "s2"} {
		if _, err := st.Commit(ctx, core.Change{Session: &core.Session{ID: sid, Phase: core.PhaseAwaitingApproval}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Commit(ctx, core.Change{SessionID: "s1", Nudges: []core.Nudge{
		{PlanID: "p1", Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "10m0s", NextFireAt: t0.Add(10 * time.Minute), CreatedAt: t0},
		{PlanID: "p1", Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "30m0s", NextFireAt: t0.Add(30 * time.Minute), CreatedAt: t0},
		{PlanID: "p1", Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5", NextFireAt: t0.Add(24 * time.Hour), CreatedAt: t0},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, core.Change{SessionID: "s2", Nudges: []core.Nudge{
		{PlanID: "p2", Kind: core.NudgeOnce, Action: core.NudgeExpire, Spec: "1h0m0s", NextFireAt: t0.Add(time.Hour), CreatedAt: t0},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, core.Change{SessionID: "s2", CancelNudges: true}); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.FireNudge(ctx, 1, t0.Add(10*time.Minute), store.NudgeFired, t0.Add(10*time.Minute), time.Time{}); err != nil || !ok {
		t.Fatalf("FireNudge = %v, %v", ok, err)
	}
}

func runNudges(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := procEnv{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }, now: func() time.Time { return fixedNow }}
	code := run(context.Background(), append([]string{"nudges"}, args...), e)
	return code, stdout.String(), stderr.String()
}

func TestNudgesListJSON(t *testing.T) {
	cfg := writeConfig(t, "store: {path: plangate.db}\n")
	seedNudges(t, cfg)
	code, out, errOut := runNudges(t, "list", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, out)
	}
	if len(got) != 4 {
		t.Fatalf("%d schedules, want 4:\n%s", len(got), out)
	}
	for _, k := range []string{"id", "session_id", "plan_id", "kind", "action", "spec", "next_fire_at", "fired", "missed", "status", "created_at"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("schedule lacks %q: %v", k, got[0])
		}
	}
	// Active first by next fire time, then the rest newest first.
	type row struct {
		id     float64
		status string
		next   any
		fired  float64
	}
	var rows []row
	for _, g := range got {
		rows = append(rows, row{g["id"].(float64), g["status"].(string), g["next_fire_at"], g["fired"].(float64)})
	}
	want := []row{{2, "active", "2026-11-30T09:30:00Z", 0}, {3, "active", "2026-12-01T09:00:00Z", 0}, {4, "cancelled", nil, 0}, {1, "done", nil, 1}}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	if got[1]["kind"] != "recurring" || got[1]["spec"] != "CRON_TZ=Europe/Berlin 0 9 * * 1-5" || got[2]["action"] != "expire" {
		t.Errorf("kind/spec/action wrong: %v / %v", got[1], got[2])
	}

	code, out, _ = runNudges(t, "list", "s2", "--json", "--config", cfg)
	if code != 0 || !strings.Contains(out, `"session_id": "s2"`) || strings.Contains(out, `"session_id": "s1"`) {
		t.Errorf("list s2: exit %d\n%s", code, out)
	}
}

func TestNudgesListText(t *testing.T) {
	cfg := writeConfig(t, "store: {path: plangate.db}\n")
	code, out, errOut := runNudges(t, "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "No nudge schedules yet") {
		t.Errorf("empty list: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = runNudges(t, "list", "--json", "--config", cfg)
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty JSON list: exit %d, %q; want []", code, out)
	}

	seedNudges(t, cfg)
	code, out, errOut = runNudges(t, "list", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header and 4 rows:\n%s", len(lines), out)
	}
	for i, w := range [][]string{
		{"ID", "SESSION", "KIND", "ACTION", "SPEC", "NEXT FIRE", "FIRED", "MISSED", "STATUS"},
		{"2", "s1", "once", "remind", "30m0s", "2026-11-30T09:30:00Z", "active"},
		{"3", "s1", "recurring", "CRON_TZ=Europe/Berlin 0 9 * * 1-5", "2026-12-01T09:00:00Z"},
		{"4", "s2", "expire", "1h0m0s", " - ", "cancelled"},
		{"1", "s1", "10m0s", " - ", "1 ", "done"},
	} {
		for _, s := range w {
			if !strings.Contains(lines[i], s) {
				t.Errorf("line %d %q lacks %q", i, lines[i], s)
			}
		}
	}
}

func TestNudgesUsage(t *testing.T) {
	cfg := writeConfig(t, "store: {path: plangate.db}\n")
	for _, args := range [][]string{
		{},
		{"show"},
		{"list", "a", "b", "--config", cfg},
		{"list", "--markdown", "--config", cfg},
		{"list", "--bogus", "--config", cfg},
	} {
		code, _, errOut := runNudges(t, args...)
		if code != 2 || !strings.Contains(errOut, "plangate nudges") {
			t.Errorf("nudges %v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
	if code, _, errOut := runNudges(t, "list", "--config", filepath.Join(t.TempDir(), "missing.yaml")); code != 1 || errOut == "" {
		t.Errorf("missing config: exit %d, %q", code, errOut)
	}
}
