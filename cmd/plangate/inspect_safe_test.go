package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// Whatever a model or a person managed to store, the inspection commands print it with
// control and escape sequences neutralized: an ESC or OSC in a plan title must not erase
// lines or write the terminal's clipboard.
func TestInspectCommandsNeutralizeEscapes(t *testing.T) {
	cfg := writeConfig(t, defaultTestConfig)
	if code, _, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	const hostile = "Docs\x1b[2K\x1b]52;c;cm0gLXJmIH4=\x07\rEVIL\u202e\ttab"
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(filepath.Dir(cfg), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := st.Plans(ctx, "")
	if err != nil || len(ps) != 1 {
		t.Fatalf("plans: %v %v", ps, err)
	}
	p := ps[0]
	p.Body.Title = hostile
	p.Body.Summary = hostile
	p.Body.Steps[0].Text = hostile
	if _, err := st.Commit(ctx, core.Change{SessionID: p.SessionID, Plans: []core.Plan{p}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plans", "list"},
		{"plans", "show", p.ID},
		{"plans", "show", p.ID, "--markdown"},
		{"sessions", "list"},
		{"sessions", "show", p.SessionID},
	} {
		code, out, errOut := cli(t, "", append(args, "--config", cfg)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\x07\r\u202e") {
			t.Errorf("%v printed raw control characters: %q", args, out)
		}
		// The title must still be there, its escapes shown (caret notation, Go quoting or
		// the plan file's own markdown escaping), not silently dropped.
		if !strings.Contains(out, "Docs^[[2K") && !strings.Contains(out, `Docs\x1b[2K`) && !strings.Contains(out, `Docs\[2K`) {
			t.Errorf("%v should show the escape visibly: %q", args, out)
		}
	}
}
