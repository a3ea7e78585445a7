package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Check is one entry of a plan's verification: a check described in words (Text), which
// the agent makes and plangate cannot, or a command plangate runs in the command sandbox
// before it calls the plan completed (Argv, with an optional short Name).
//
// In JSON a check in words is a string and a command an object, {"argv": [...], "name":
// "..."}: the list the model sends mixes both, and bodies stored before commands existed
// (lists of strings) read unchanged.
type Check struct {
	Text string
	Name string
	Argv []string
}

// Words makes checks described in words.
func Words(texts ...string) []Check {
	var out []Check
	for _, t := range texts {
		out = append(out, Check{Text: t})
	}
	return out
}

// IsCommand reports whether plangate runs c.
func (c Check) IsCommand() bool { return c.Argv != nil }

// Label is how a command is named in chat and in results: its name, else its argv.
func (c Check) Label() string {
	if c.Name != "" {
		return c.Name
	}
	return DisplayArgv(c.Argv)
}

// Commands are the checks plangate runs, in plan order.
func Commands(list []Check) []Check {
	var out []Check
	for _, c := range list {
		if c.IsCommand() {
			out = append(out, c)
		}
	}
	return out
}

type checkJSON struct {
	Argv []string `json:"argv"`
	Name string   `json:"name,omitempty"`
}

// MarshalJSON writes a check in words as a string, a command as an object.
func (c Check) MarshalJSON() ([]byte, error) {
	if !c.IsCommand() {
		return json.Marshal(c.Text)
	}
	return json.Marshal(checkJSON{Argv: c.Argv, Name: c.Name})
}

// checkFields are the members of a command check.
var checkFields = []string{"argv", "name"}

// UnmarshalJSON reads a string or a {"argv", "name"} object; anything else is refused
// with the shape to send.
func (c *Check) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Check{Text: s}
		return nil
	}
	if len(data) == 0 || data[0] != '{' {
		return errors.New(`a verification entry is a string (a check in words) or {"argv": ["program", "arg", ...], "name": "..."} (a command plangate runs)`)
	}
	var v checkJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf(`a command check is {"argv": ["program", "arg", ...], "name": "..."}: %v`, strings.TrimPrefix(err.Error(), "json: "))
	}
	if v.Argv == nil {
		v.Argv = []string{} // present but empty: the judge says what is missing
	}
	*c = Check{Name: v.Name, Argv: v.Argv}
	return nil
}

// Limits of a command check: enough for any test runner's command line, short enough to
// read on a card.
const (
	MaxCheckArgs    = 32
	MaxCheckArgLen  = 512 // bytes per argument
	MaxCheckArgvLen = 2048
	maxCheckNameLen = 60 // characters
)

// shells are the programs whose -c would turn an argv back into a shell string.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"}

// check judges one verification entry (label "verification 2").
func (j *judgeNotes) check(label string, c Check) {
	if !c.IsCommand() {
		if strings.TrimSpace(c.Text) == "" {
			j.add("%s is empty; remove it or fill it in", label)
		}
		j.line(label, c.Text)
		return
	}
	j.line(label+" name", c.Name)
	if n := utf8.RuneCountInString(c.Name); n > maxCheckNameLen {
		j.add("%s name is %d characters long; keep it to at most %d", label, n, maxCheckNameLen)
	}
	for _, p := range ArgvProblems(c.Argv) {
		j.add("%s: %s", label, p)
	}
}

// ArgvProblems are the reasons argv cannot be a command check, worded for the model: it
// must be a program and its arguments as separate strings (no shell string), bounded,
// with no invisible or control characters.
func ArgvProblems(argv []string) []string {
	const example = `{"argv": ["go", "test", "./..."]}`
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		return []string{"argv is empty; give the program and its arguments as separate strings, like " + example}
	}
	var out []string
	total := 0
	for i, a := range argv {
		total += len(a)
		if len(a) > MaxCheckArgLen {
			out = append(out, fmt.Sprintf("argv[%d] is %d bytes long; keep each argument to at most %d", i, len(a), MaxCheckArgLen))
		}
		if p := textProblem(a, false); p != "" {
			out = append(out, fmt.Sprintf("argv[%d] %s", i, p))
		}
	}
	switch prog := argv[0]; {
	case len(argv) > MaxCheckArgs:
		out = append(out, fmt.Sprintf("argv has %d entries; at most %d are allowed", len(argv), MaxCheckArgs))
	case total > MaxCheckArgvLen:
		out = append(out, fmt.Sprintf("argv is %d bytes long; at most %d are allowed", total, MaxCheckArgvLen))
	case strings.ContainsAny(prog, " \t") && len(argv) == 1:
		out = append(out, fmt.Sprintf("argv[0] %s is a shell string; there is no shell: split it into the program and its arguments, like %s", clipQuote(prog), example))
	case strings.TrimSpace(prog) != prog:
		out = append(out, "argv[0] has leading or trailing spaces; give the program's name alone")
	}
	for _, sh := range shells {
		if argv[0] == sh && len(argv) > 1 && strings.HasPrefix(argv[1], "-") && !strings.HasPrefix(argv[1], "--") && strings.Contains(argv[1], "c") {
			out = append(out, fmt.Sprintf("argv runs %s -c, a shell string; name the program to run and its arguments instead, like %s", sh, example))
			break
		}
	}
	return out
}

// DisplayArgv shows argv on one line: arguments that need it are quoted as Go strings,
// so the line says exactly what runs.
func DisplayArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if !plainArg(a) {
			a = fmt.Sprintf("%q", a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// plainArg reports whether a shows as itself in a command line: no white space, quotes,
// backslashes or backticks, not empty.
func plainArg(a string) bool {
	return a != "" && !strings.ContainsAny(a, " \t\n\r\"'\\`") && strings.IndexFunc(a, isUnsafeRune) < 0
}

// argvSpan is a command as the plan file writes it, the inside of a code span: the words
// joined by spaces when each is plain and the program does not start with "[", else the
// JSON array, which parseArgvSpan reads back exactly either way.
func argvSpan(argv []string) string {
	plain := len(argv) > 0 && !strings.HasPrefix(argv[0], "[")
	for _, a := range argv {
		plain = plain && plainArg(a)
	}
	if plain {
		return strings.Join(argv, " ")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(argv) // strings only: cannot fail
	// A backtick would end the code span: JSON may spell it as an escape.
	return strings.ReplaceAll(strings.TrimSpace(buf.String()), "`", `\u0060`)
}

// parseArgvSpan reads a command written by argvSpan.
func parseArgvSpan(s string) ([]string, bool) {
	if strings.HasPrefix(s, "[") {
		var argv []string
		if json.Unmarshal([]byte(s), &argv) != nil {
			return nil, false
		}
		return argv, true
	}
	argv := strings.Fields(s)
	return argv, len(argv) > 0
}

// CheckRun is what plangate recorded of running one command check: its exit code (-1
// when it did not run to an exit: timed out, refused, not started), Error saying why it
// has none, and the tail of its output, bounded by MaxTailBytes.
type CheckRun struct {
	Name     string   `json:"name,omitempty"`
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	Error    string   `json:"error,omitempty"`
	Tail     string   `json:"tail,omitempty"`
}

// MaxTailBytes bounds the output kept of one check run.
const MaxTailBytes = 2000

// Passed reports whether the check ran and exited 0.
func (r CheckRun) Passed() bool { return r.Error == "" && r.ExitCode == 0 }

// Label names the check as Check.Label does.
func (r CheckRun) Label() string { return Check{Name: r.Name, Argv: r.Argv}.Label() }

// Outcome is the run in words: "exit 0", "exit 1", or why it did not run to an exit.
func (r CheckRun) Outcome() string {
	if r.Error != "" {
		return r.Error
	}
	return fmt.Sprintf("exit %d", r.ExitCode)
}

// Tail keeps the last MaxTailBytes of out, cut at a line start when one is near, as
// valid UTF-8.
func Tail(out string) string {
	out = strings.TrimRight(out, "\n")
	if len(out) <= MaxTailBytes {
		return strings.ToValidUTF8(out, "\ufffd")
	}
	t := out[len(out)-MaxTailBytes:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < MaxTailBytes/4 {
		t = t[i+1:]
	}
	return "…\n" + strings.ToValidUTF8(t, "\ufffd")
}

// Verification is what plangate recorded of running a version's command checks: the
// latest attempt's runs, how many attempts there were, and how many failed in a row
// since the last one a person let go on (the stop after retry_policy.max_verifier_retries
// counts these).
type Verification struct {
	Runs     []CheckRun `json:"runs"`
	Attempts int        `json:"attempts"`
	Failures int        `json:"failures"`
	Passed   bool       `json:"passed"`
}

// Failed are the runs of the latest attempt that did not pass.
func (v Verification) Failed() []CheckRun {
	var out []CheckRun
	for _, r := range v.Runs {
		if !r.Passed() {
			out = append(out, r)
		}
	}
	return out
}

// trimChecks trims the text and name of every check and drops checks in words left
// empty; a command's arguments are kept exactly as sent.
func trimChecks(in []Check) []Check {
	var out []Check
	for _, c := range in {
		if !c.IsCommand() {
			if c.Text = strings.TrimSpace(c.Text); c.Text != "" {
				out = append(out, c)
			}
			continue
		}
		c.Name = strings.Join(strings.Fields(c.Name), " ")
		out = append(out, c)
	}
	return out
}

// Equal reports whether c and d are the same check.
func (c Check) Equal(d Check) bool {
	return c.Text == d.Text && c.Name == d.Name && c.IsCommand() == d.IsCommand() && slices.Equal(c.Argv, d.Argv)
}

// The notes of the file's "## Verification" section, one for each case; ParseMarkdown
// skips them.
const (
	NoVerificationNote = "No verification declared: plangate will not run checks before calling it done."
	WordsOnlyNote      = "No command declared: plangate will not run these checks before calling it done."
	CommandsNote       = "plangate runs each command below in the command sandbox before calling the plan done; all must pass."
)

// VerificationNote is the note for a verification list.
func VerificationNote(list []Check) string {
	switch {
	case len(list) == 0:
		return NoVerificationNote
	case len(Commands(list)) == 0:
		return WordsOnlyNote
	}
	return CommandsNote
}

// CheckLine is one verification entry as the file and the card write it: a check in
// words escaped, a command as a code span after its escaped name.
func CheckLine(c Check) string {
	if !c.IsCommand() {
		return EscapeMarkdown(c.Text)
	}
	span := codeSpan(argvSpan(c.Argv)) // verbatim: the judge refuses control and invisible characters
	if n := EscapeMarkdown(c.Name); n != "" {
		return n + ": " + span
	}
	return span
}

// writeVerification writes "## Verification": the note that says what plangate runs, then
// the entries.
func writeVerification(b *bytes.Buffer, list []Check) {
	fmt.Fprintf(b, "\n## Verification\n\n%s\n", VerificationNote(list))
	if len(list) == 0 {
		return
	}
	b.WriteString("\n")
	for _, c := range list {
		if line := CheckLine(c); line != "" {
			fmt.Fprintf(b, "- %s\n", line)
		}
	}
}

// verificationRunLines are the lines of "## Verification runs": the latest attempt's
// outcome and one line per command. It is plangate's section, skipped when read back.
func verificationRunLines(v *Verification) []string {
	if v == nil {
		return nil
	}
	lines := []string{VerificationSummary(*v)}
	for _, r := range v.Runs {
		box := "[x]"
		if !r.Passed() {
			box = "[ ]"
		}
		lines = append(lines, fmt.Sprintf("%s %s — %s", box, EscapeMarkdown(r.Label()), EscapeMarkdown(r.Outcome())))
	}
	return lines
}

// VerificationSummary is the latest attempt in words: "Attempt 2: 1 of 2 checks failed".
func VerificationSummary(v Verification) string {
	failed := len(v.Failed())
	if failed == 0 {
		return fmt.Sprintf("Attempt %d: all %d checks passed", v.Attempts, len(v.Runs))
	}
	return fmt.Sprintf("Attempt %d: %d of %d checks failed", v.Attempts, failed, len(v.Runs))
}
