package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixedNow is the clock of every golden transcript, so plan file names and times are stable.
var fixedNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

const defaultTestConfig = `store: {path: plangate.db}
plans: {dir: plans}
workspace: {root: workspace, seed: "${SEED}"}
llm: {provider: script, script: "${SCRIPT}"}
`

// TestChatGolden runs each scenario under testdata/chat/<name>/: input.txt is typed into
// `plangate chat` (a line "#restart" ends the process and starts a new one on the same
// files, as a restart would), the scripted model is script.yaml (or the shipped demo
// script), and everything printed on stdout must equal output.golden. Update with
// go test ./cmd/plangate -run TestChatGolden -update.
func TestChatGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "chat", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := runScenario(t, dir)
			golden := filepath.Join(dir, "output.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from %s (run with -update after checking):\n%s", golden, diffLines(string(want), got))
			}
		})
	}
}

func runScenario(t *testing.T, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	cfg := defaultTestConfig
	if b, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
		cfg = string(b)
	}
	cfgPath := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join(dir, "script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		script, _ = filepath.Abs(filepath.Join("..", "..", "demo", "script.yaml"))
	}
	input, err := os.ReadFile(filepath.Join(dir, "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, part := range strings.Split(string(input), "#restart\n") {
		if i > 0 {
			out.WriteString("=== restart ===\n\n")
		}
		var stdout, stderr bytes.Buffer
		e := procEnv{
			stdin: strings.NewReader(part), stdout: &stdout, stderr: &stderr,
			getenv: func(k string) string {
				switch k {
				case "SCRIPT":
					return script
				case "SEED":
					return demoSeed(t)
				}
				return ""
			},
			now: func() time.Time { return fixedNow },
		}
		code := run(context.Background(), []string{"chat", "--config", cfgPath}, e)
		if code != 0 {
			t.Fatalf("plangate chat exited %d: %s", code, stderr.String())
		}
		text := strings.ReplaceAll(stdout.String(), tmp, "$TMP")
		out.WriteString(strings.ReplaceAll(text, filepath.Dir(script), "$SCRIPTDIR"))
	}
	return out.String()
}

func demoSeed(t *testing.T) string {
	seed, err := filepath.Abs(filepath.Join("..", "..", "demo", "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

// diffLines shows the first differing line with a little context.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + wl + "\n  got: " + gl
		}
	}
	return "(identical lines, different endings)"
}
