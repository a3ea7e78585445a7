package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// openTest opens a fresh store in a temporary directory and closes it after the test.
func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plangate.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// at returns a fixed UTC time with nanoseconds, so exact round trips are tested.
func at(minute int) time.Time {
	return time.Date(2025, 3, 14, 9, minute, 26, 535897932, time.UTC)
}

// fullSession has every field set, including a question and queued injections.
func fullSession(id string) core.Session {
	return core.Session{
		ID:             id,
		Address:        core.Address{Channel: "slack", Account: "T1", Chat: "C2", Thread: "1700000000.0001"},
		Phase:          core.PhaseAwaitingApproval,
		AutoApprove:    true,
		Owner:          "U123",
		PlanID:         id + "-p1",
		ApprovalID:     id + "-a1",
		RejectionCount: 2,
		LastFeedback:   "smaller steps, please",
		Question: &core.Question{
			Text:          "Which database?",
			Options:       []string{"sqlite", "postgres"},
			AllowFreeText: true,
			AskedAt:       at(1),
		},
		Injections: []core.Injection{
			{Kind: core.InjectDecision, Text: "[PLAN_DECISION]: rejected"},
			{Kind: core.InjectAnswer, Text: "[QUESTION_ANSWER]: sqlite"},
		},
		CreatedAt: at(0),
		UpdatedAt: at(2),
	}
}

// fullPlan has every field set, including a decision and every part of the body.
func fullPlan(id, sessionID string, version int) core.Plan {
	return core.Plan{
		ID:         id,
		SessionID:  sessionID,
		Version:    version,
		Status:     core.PlanAccepted,
		ApprovalID: sessionID + "-a" + string(rune('0'+version)),
		Body: plan.Body{
			Title:   "Add a changelog",
			Summary: "Create CHANGELOG.md & link it",
			Steps: []plan.Step{
				{ID: "s1", Text: "Create CHANGELOG.md", Status: plan.StepCompleted,
					AcceptanceCriteria: []string{"file exists"}, VerifiedCriteria: []string{"file exists"}},
				{ID: "s2", Text: "Link it from README", Status: plan.StepInProgress},
			},
			Assumptions:  []string{"README.md exists"},
			Risks:        []plan.Risk{{Risk: "merge conflict", Mitigation: "small diff"}},
			Verification: plan.Words("cat CHANGELOG.md"),
			Scope:        plan.Scope{AllowedPaths: []string{"*.md"}, ForbiddenPaths: []string{".git/**"}},
			References:   []string{"https://keepachangelog.com"},
		},
		Hash: "sha256:abc",
		File: "slack-C2/plan-2025-03-14-add-a-changelog-v1.md",
		Decision: &plan.Decision{
			By: "U123", ByName: "Alice", At: at(3), Channel: "slack", Outcome: "accepted", Feedback: "ok",
		},
		CreatedAt: at(1),
		UpdatedAt: at(3),
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("this is not a database\n", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	fileAsDir := filepath.Join(dir, "plain")
	if err := os.WriteFile(fileAsDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"text file", text, "opening store " + text + ": file is not a SQLite database"},
		{"directory", dir, "is a directory"},
		{"missing directory", filepath.Join(dir, "nope", "plangate.db"), "directory " + filepath.Join(dir, "nope") + " does not exist"},
		{"parent is a file", filepath.Join(fileAsDir, "plangate.db"), "is not a directory"},
		{"empty path", "", "no path given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want error containing %q", tt.path, tt.want)
			}
			t.Logf("Open: %v", err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%q) = %v, want it to contain %q", tt.path, err, tt.want)
			}
		})
	}
	// The text file must be left as it was.
	b, err := os.ReadFile(text)
	if err != nil || !strings.HasPrefix(string(b), "this is not a database") {
		t.Fatalf("text file was changed: %q, %v", b[:min(len(b), 40)], err)
	}
}

func TestOpenUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), filepath.Join(dir, "plangate.db"))
	t.Logf("Open: %v", err)
	if err == nil || !strings.Contains(err.Error(), "cannot open or create the database file") {
		t.Fatalf("Open in read-only dir = %v, want a clear error", err)
	}
}

func TestOpenReadOnlyDatabase(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	path := filepath.Join(t.TempDir(), "plangate.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"read-only file", func(t *testing.T) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Chmod(p, 0o444); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}},
		{"read-only directory", func(t *testing.T) {
			if err := os.Chmod(filepath.Dir(path), 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Dir(path), 0o755) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t)
			s, err := Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open of a database that cannot be written succeeded")
			}
			t.Logf("Open: %v", err)
			if !strings.Contains(err.Error(), "opening store "+path+": ") ||
				!strings.Contains(err.Error(), "not writable") && !strings.Contains(err.Error(), "cannot open") {
				t.Fatalf("err = %v, want a clear error", err)
			}
		})
	}
}

func TestOpenEscapesPath(t *testing.T) {
	// Characters that mean something in a URI must reach the file system unchanged.
	dir := filepath.Join(t.TempDir(), "a dir?x=1#frag%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan gate?.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.SetChannelState(context.Background(), "telegram", "1", "offset", "42"); err != nil {
		t.Fatalf("SetChannelState: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at the given path: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "plan gate?.db") {
			t.Errorf("unexpected file %q in %s", e.Name(), dir)
		}
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plangate.db")
	want, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Version  int
		Name, At string
	}
	read := func(s *Store) []row {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.Version, &r.Name, &r.At); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	var first []row
	for i := range 3 {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		got := read(s)
		s.Close()
		if len(got) != len(want) {
			t.Fatalf("open #%d: %d migrations recorded, want %d", i+1, len(got), len(want))
		}
		for j, m := range want {
			if got[j].Version != m.version || got[j].Name != m.name {
				t.Errorf("open #%d: row %d = %+v, want version %d name %q", i+1, j, got[j], m.version, m.name)
			}
		}
		if i == 0 {
			first = got
		} else if got[0].At != first[0].At {
			t.Errorf("open #%d re-applied migration 1: applied_at %s, was %s", i+1, got[0].At, first[0].At)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "schema version 999 is newer") {
		t.Fatalf("err = %v, want it to name the newer version", err)
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr string
	}{
		{"ordered", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A"), "m/README": file("")}, []int{1, 2}, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")}, nil, "expected version 2"},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")}, nil, "expected version 2"},
		{"no number", fstest.MapFS{"m/init.sql": file("A")}, nil, "want NNNN_name.sql"},
		{"no name", fstest.MapFS{"m/0001_.sql": file("A")}, nil, "want NNNN_name.sql"},
		{"zero", fstest.MapFS{"m/0000_a.sql": file("A")}, nil, "want NNNN_name.sql"},
		{"empty", fstest.MapFS{"m/x.txt": file("")}, nil, "no migrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := loadMigrations(tt.fs, "m")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.version)
			}
			if len(got) != len(tt.want) || got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1] {
				t.Fatalf("versions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFailedMigrationLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	bad, err := loadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	next := len(bad) + 1
	bad = append(bad, migration{version: next, name: "broken", sql: "CREATE TABLE half_done (x INTEGER); CREATE TABLE oops (;"})
	err = apply(ctx, s.w, s.w.d, bad, time.Now)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("applying migration %04d_broken", next)) {
		t.Fatalf("apply = %v, want an error naming the migration", err)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("the failed migration's first statement was kept")
	}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, next).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("the failed migration was recorded")
	}
}

func TestReadPoolCannotWrite(t *testing.T) {
	s, _ := openTest(t)
	_, err := s.r.ExecContext(context.Background(), `INSERT INTO channel_state VALUES ('a', 'b', 'c', 'd', 'e')`)
	if err == nil {
		t.Fatal("insert through the read pool succeeded")
	}
}

func TestTimeRoundTripIsExactAndUTC(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	in := time.Date(2024, 12, 31, 23, 59, 59, 999999999, zone)
	got, err := parseTime(formatTime(in), "t")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(in) || got.Location() != time.UTC {
		t.Fatalf("round trip of %v = %v", in, got)
	}
	// Fixed width keeps text order equal to time order.
	if a, b := formatTime(at(0).Add(500*time.Millisecond)), formatTime(at(0).Add(time.Second)); a >= b {
		t.Fatalf("text order broken: %s >= %s", a, b)
	}
	if _, err := parseTime("yesterday", "t"); err == nil {
		t.Fatal("parseTime accepted garbage")
	}
}

// mustJSON is for building raw rows in tests.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestErrorsAreSentinels(t *testing.T) {
	// The engine branches on these with errors.Is; make sure wrapping keeps them.
	s, _ := openTest(t)
	_, err := s.Session(context.Background(), "nope")
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}
