package plan

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// A verification list mixes strings and {argv, name} objects; bodies stored as lists of
// strings read unchanged and hash as they did.
func TestVerificationJSON(t *testing.T) {
	args := `{"title": "T", "plan": [{"step": "a"}], "verification": ["  make linkcheck ", {"argv": ["go", "test", "./..."], "name": " unit  tests "}, ""]}`
	b, err := ParseProposal(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	want := []Check{{Text: "make linkcheck"}, {Name: "unit tests", Argv: []string{"go", "test", "./..."}}}
	if !slices.EqualFunc(b.Verification, want, Check.Equal) {
		t.Fatalf("parsed %+v, want %+v", b.Verification, want)
	}
	data, err := json.Marshal(b.Verification)
	if err != nil || string(data) != `["make linkcheck",{"argv":["go","test","./..."],"name":"unit tests"}]` {
		t.Fatalf("encoded %s, %v", data, err)
	}
	var old Body
	if err := json.Unmarshal([]byte(`{"title": "T", "verification": ["a", "b"]}`), &old); err != nil || !slices.EqualFunc(old.Verification, Words("a", "b"), Check.Equal) {
		t.Fatalf("an old body reads as %+v, %v", old.Verification, err)
	}
	if got := Hash(Body{Title: "T", Verification: Words("a")}); got != Hash(Body{Title: "T", Verification: Words("a")}) ||
		got == Hash(Body{Title: "T", Verification: []Check{{Argv: []string{"a"}}}}) {
		t.Fatal("a command and a check in words with the same text hash alike")
	}

	for _, bad := range []struct{ args, want string }{
		{`{"title": "T", "plan": [{"step": "a"}], "verification": [{"argv": ["go"], "cmd": "x"}]}`, `unknown field "cmd" in verification[0]; allowed: argv, name`},
		{`{"title": "T", "plan": [{"step": "a"}], "verification": [3]}`, `a verification entry is a string (a check in words) or {"argv"`},
		{`{"title": "T", "plan": [{"step": "a"}], "verification": [{"argv": "go test"}]}`, `a command check is {"argv"`},
	} {
		_, err := ParseProposal(json.RawMessage(bad.args))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.args, err, bad.want)
		}
	}
}

func TestJudgeCommandChecks(t *testing.T) {
	long := strings.Repeat("x", MaxCheckArgLen+1)
	many := make([]string, MaxCheckArgs+1)
	for i := range many {
		many[i] = "a"
	}
	cases := []struct {
		name string
		argv []string
		want string // "" = accepted
	}{
		{"plain", []string{"go", "test", "./..."}, ""},
		{"program named sh without -c", []string{"sh", "check.sh"}, ""},
		{"empty", []string{}, "argv is empty"},
		{"empty program", []string{"", "x"}, "argv is empty"},
		{"shell string", []string{"go test ./..."}, `argv[0] "go test ./..." is a shell string; there is no shell`},
		{"sh -c", []string{"sh", "-c", "make"}, "argv runs sh -c, a shell string"},
		{"bash -ec", []string{"bash", "-ec", "make"}, "argv runs bash -c"},
		{"long argument", []string{"echo", long}, "argv[1] is 513 bytes long"},
		{"too many", many, "argv has 33 entries"},
		{"control character", []string{"echo", "a\x1bb"}, "argv[1] contains the invisible or control character U+001B"},
		{"line break", []string{"echo", "a\nb"}, "argv[1] contains a line break"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}, Verification: []Check{{Argv: tc.argv}}}
			err := Judge(b)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "verification 1: "+tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	b := Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}},
		Verification: []Check{{Name: strings.Repeat("n", 61), Argv: []string{"go"}}}}
	if err := Judge(b); err == nil || !strings.Contains(err.Error(), "verification 1 name is 61 characters long") {
		t.Fatalf("a long name: %v", err)
	}
}

// An edited file's commands read back exactly, whatever their arguments hold; a command
// written wrongly is refused with the line and the form to use.
func TestParseVerificationSection(t *testing.T) {
	checks := []Check{
		{Text: "The docs read `well`"},
		{Argv: []string{"go", "test", "./..."}},
		{Name: "odd: name", Argv: []string{"[", "-f", "a b", `q"t`, "x`y", "@here", "<b>"}},
	}
	file := Render(File{Body: Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}, Verification: checks},
		Run: Run{Verification: &Verification{Attempts: 1, Runs: []CheckRun{{Argv: []string{"go"}, ExitCode: 2}}},
			Stop: &Stop{Kind: StopVerificationFailed, Message: "Stopped: checks failed\n## Steps\n- [ ] injected"}}})
	back, err := ParseMarkdown(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, file)
	}
	if !slices.EqualFunc(back.Verification, checks, Check.Equal) || len(back.Steps) != 1 {
		t.Fatalf("read back %+v, steps %+v\nwant %+v, one step\n%s", back.Verification, back.Steps, checks, file)
	}
	if !strings.Contains(string(file), "## Stopped\n\n- stopped: verification failed (verification_failed) at ") {
		t.Fatalf("file has no stop:\n%s", file)
	}
	if !strings.Contains(string(file), "- `go test ./...`\n") || !strings.Contains(string(file), "## Verification runs\n\n- Attempt 1: 1 of 1 checks failed\n- [ ] go — exit 2\n") {
		t.Fatalf("file:\n%s", file)
	}
	for _, bad := range []struct{ section, want string }{
		{"- name `go test`\n", `put a ":" after the name`},
		{"- `[\"go\", 3]`\n", "the command in the code span is not a program and its arguments"},
		{"Run these, please.\n", "an entry of this section must be a list item"},
	} {
		_, err := ParseMarkdown([]byte("# T\n\n## Steps\n\n- [ ] a\n\n## Verification\n\n" + bad.section))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 9 || !strings.Contains(pe.Msg, bad.want) {
			t.Errorf("%q: got %v, want line 9: %q", bad.section, err, bad.want)
		}
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	out := strings.Repeat("line of output\n", 1000) + "FAIL: the end\n"
	tail := Tail(out)
	if len(tail) > MaxTailBytes+8 || !strings.HasSuffix(tail, "FAIL: the end") || !strings.HasPrefix(tail, "…\nline of output") {
		t.Fatalf("tail of %d bytes: %q…", len(tail), tail[:40])
	}
	if got := Tail("short\n"); got != "short" {
		t.Fatalf("short output: %q", got)
	}
}
