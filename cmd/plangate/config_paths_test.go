package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnFilesOutsideWorkspace: the database and the plans directory may not lie inside the
// workspace the agent's tools can change, however the paths are spelled.
func TestOwnFilesOutsideWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		setup func(t *testing.T, dir string)
		want  []string // each problem, "" = the config is fine
	}{
		{name: "defaults are siblings", body: ""},
		{name: "a name that only starts like the root", body: "workspace: {root: work}\nstore: {path: workspace/db}\nplans: {dir: work2}\n"},
		{name: "dot-dot out of the root", body: "store: {path: workspace/../plangate.db}\n"},
		{
			name: "store file in the root",
			body: "store: {path: workspace/plangate.db}\n",
			want: []string{"FILE:1: store.path DIR/workspace/plangate.db is inside workspace.root DIR/workspace: the agent's tools and commands could read and change plangate's database; put store.path outside workspace.root"},
		},
		{
			name: "plans dir is the root, and the store in a per-session directory",
			body: "workspace: {root: ws}\nplans: {dir: ./ws/}\nstore: {path: ws/terminal/local/x.db}\n",
			want: []string{
				"FILE:2: plans.dir DIR/ws is inside workspace.root DIR/ws: the agent's tools and commands could read and change the plan files; put plans.dir outside workspace.root",
				"FILE:3: store.path DIR/ws/terminal/local/x.db is inside workspace.root DIR/ws: *",
			},
		},
		{
			name: "absolute workspace around a relative store",
			body: "workspace: {root: DIR}\n",
			want: []string{
				"FILE: store.path DIR/plangate.db is inside workspace.root DIR: *",
				"FILE: plans.dir DIR/plans is inside workspace.root DIR: *",
			},
		},
		{
			name: "the store reached through a link into the workspace",
			body: "store: {path: data/plangate.db}\n",
			setup: func(t *testing.T, dir string) {
				mkdir(t, filepath.Join(dir, "workspace", "data"))
				symlink(t, filepath.Join(dir, "workspace", "data"), filepath.Join(dir, "data"))
			},
			want: []string{"FILE:1: store.path DIR/data/plangate.db is inside workspace.root DIR/workspace once symbolic links are resolved (REAL/workspace/data/plangate.db in REAL/workspace): *"},
		},
		{
			name: "the workspace reached through a link onto the plans",
			body: "workspace: {root: ws}\nplans: {dir: state/plans}\n",
			setup: func(t *testing.T, dir string) {
				mkdir(t, filepath.Join(dir, "state", "plans"))
				symlink(t, filepath.Join(dir, "state"), filepath.Join(dir, "ws"))
			},
			want: []string{"FILE:2: plans.dir DIR/state/plans is inside workspace.root DIR/ws once symbolic links are resolved (REAL/state/plans in REAL/state): *"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			real, err := filepath.EvalSymlinks(dir)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tc.body, "DIR", dir)), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(path, env(nil))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				return
			}
			ce, ok := err.(*ConfigError)
			if !ok {
				t.Fatalf("LoadConfig = %v, %v; want a *ConfigError", cfg, err)
			}
			if len(ce.Problems) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", ce, len(tc.want))
			}
			for i, p := range ce.Problems {
				p = strings.ReplaceAll(p, path, "FILE")
				want := tc.want[i]
				if real != dir {
					p = strings.ReplaceAll(p, real, "REAL")
				} else {
					want = strings.ReplaceAll(want, "REAL", "DIR") // no link above the test's directory
				}
				p = strings.ReplaceAll(p, dir, "DIR")
				if prefix, ok := strings.CutSuffix(want, "*"); ok && strings.HasPrefix(p, prefix) || p == want {
					continue
				}
				t.Errorf("problem %d:\n got %s\nwant %s", i, p, want)
			}
		})
	}
}

// TestStartRefusesStoreInWorkspace: config check and the commands that start (chat, serve)
// refuse before anything is created.
func TestStartRefusesStoreInWorkspace(t *testing.T) {
	cfg := writeConfig(t, "store: {path: workspace/plangate.db}\nllm: {provider: script, script: \"${SCRIPT}\"}\n")
	for _, args := range [][]string{{"config", "check"}, {"chat"}, {"serve"}} {
		code, out, errOut := cli(t, "hello\n", append(args, "--config", cfg)...)
		if code != 1 || !strings.Contains(errOut, "store.path") || !strings.Contains(errOut, "is inside workspace.root") || strings.Contains(out, "config ok") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "workspace")); !os.IsNotExist(err) {
		t.Errorf("the workspace was created (or stat failed: %v)", err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
