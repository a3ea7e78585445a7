package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestStoreMigrate(t *testing.T) {
	cfg := writeConfig(t, "store: {path: data/state.db}\n")
	db := filepath.Join(filepath.Dir(cfg), "data", "state.db")
	code, out, errOut := cli(t, "", "store", "migrate", "--config", cfg)
	m := regexp.MustCompile(`^(.*): schema version 0 -> (\d+) \(applied 0001_init(, \d{4}_[a-z_]+)*\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != db {
		t.Fatalf("first migrate: %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	code, out, _ = cli(t, "", "store", "migrate", "--config", cfg)
	if want := fmt.Sprintf("%s: schema version %s, up to date\n", db, m[2]); code != 0 || out != want {
		t.Errorf("second migrate: %d %q, want %q", code, out, want)
	}
	// The migrated file is the one chat then uses.
	if code, _, errOut := cli(t, "", "sessions", "list", "--config", cfg); code != 0 {
		t.Errorf("sessions list after migrate: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"store"}, 2, "plangate store migrate [--config F]"},
		{[]string{"store", "frob"}, 2, "plangate store migrate"},
		{[]string{"store", "migrate", "extra", "--config", cfg}, 2, "takes no arguments"},
		{[]string{"store", "migrate", "--config", writeConfig(t, "store: {path: workspace/x.db}\n")}, 1, "is inside workspace.root"},
	} {
		code, _, errOut := cli(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
