package machine_test

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core/machine"
)

func TestDestructiveDefaults(t *testing.T) {
	ps, err := machine.ParseCommandPatterns(machine.DefaultDestructive)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv string
		want string // the pattern that matches; "" = none
	}{
		{"git push --force", "git push --force"},
		{"git -C app push origin main --force", "git push --force"},
		{"git push --force=true origin", "git push --force"},
		{"git push -fu origin main", "git push -f"},
		{"git push --force-with-lease", "git push --force-with-lease"},
		{"git push origin +refs/heads/main", "git push +*"},
		{"/usr/bin/git reset --hard HEAD~1", "git reset --hard"},
		{"git clean -xdf", "git clean -f"},
		{"git branch -D topic", "git branch -D"},
		{"rm -rf /home/me", "rm -r <outside>"},
		{"rm -r sub/../../up", "rm -r <outside>"},
		{"rm -R ~", "rm -R <outside>"},
		{"rm --recursive ..", "rm --recursive <outside>"},
		// Ordinary work.
		{"git push origin main", ""},
		{"git push --follow-tags", ""},
		{"git reset --soft HEAD~1", ""},
		{"git clean -n", ""},
		{"git branch -d topic", ""},
		{"git commit -am fix", ""},
		{"rm -r build", ""},
		{"rm -r ./a/../b", ""},
		{"rm /tmp/x", ""},
		{"rm -- -r /x", "rm -r <outside>"}, // argv order is not parsed: rather ask than guess
		{"grep -r push --force", ""},
		{"", ""},
	} {
		got, ok := machine.MatchDestructive(ps, strings.Fields(c.argv))
		if (c.want != "") != ok || got.Text != c.want {
			t.Errorf("%q matches %q (%v), want %q", c.argv, got.Text, ok, c.want)
		}
	}
}

func TestParseCommandPatternRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"   ":             "is empty",
		"<outside> -r":    "the first word is the program",
		"g* push":         "the first word is the program",
		"rm -r <inside>":  "the only placeholder is <outside>",
		"rm -r <outside>": "",
	} {
		_, err := machine.ParseCommandPattern(in)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
	if _, err := machine.ParseCommandPatterns([]string{"git push --force", ""}); err == nil || !strings.HasPrefix(err.Error(), "[1] ") {
		t.Errorf("list error %v, want it to name entry [1]", err)
	}
}
