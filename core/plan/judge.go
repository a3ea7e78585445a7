package plan

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Plan limits. They keep a plan readable in a chat and its file small; the judge and
// ApplyUpdate enforce them.
const (
	maxTitleLen  = 80   // characters
	MaxSteps     = 50   // steps per plan
	MaxFieldLen  = 2000 // characters in any one text field
	maxListItems = 50   // entries in any other list (assumptions, risks, criteria, paths, ...)

	maxScopeGroups       = 3  // {a,b} groups in one scope entry
	maxScopeAlternatives = 20 // commas in those groups
)

// Judge validates a proposed plan before anyone sees it. It returns nil, or an error
// with one problem per line, worded for the model, which gets it back as a tool error.
func Judge(b Body) error {
	var j judgeNotes

	switch n := utf8.RuneCountInString(b.Title); {
	case strings.TrimSpace(b.Title) == "":
		j.add("the plan has no title; give it a short title (at most %d characters)", maxTitleLen)
	case n > maxTitleLen:
		j.add("the title is %d characters long; shorten it to at most %d", n, maxTitleLen)
	}
	j.chars("the title", b.Title, false)
	j.text("the summary", b.Summary)

	switch {
	case len(b.Steps) == 0:
		j.add(`the plan has no steps; list at least one in "plan": [{"step": "..."}]`)
	case len(b.Steps) > MaxSteps:
		j.add("the plan has %d steps; at most %d are allowed, so combine related steps", len(b.Steps), MaxSteps)
	}
	var inProgress []string
	firstWithText := map[string]int{}
	for i, s := range b.Steps {
		name := "step " + strconv.Itoa(i+1)
		text := strings.TrimSpace(s.Text)
		if text == "" {
			j.add("%s has no text; say what the step does", name)
		} else {
			key := strings.ToLower(strings.Join(strings.Fields(text), " "))
			if first, dup := firstWithText[key]; dup {
				j.add("steps %d and %d have the same text %q; make every step distinct, because update_plan matches steps by their text", first, i+1, text)
			} else {
				firstWithText[key] = i + 1
			}
		}
		j.line(name, s.Text)
		if !s.Status.Valid() {
			j.add("%s has status %q; use one of %s", name, s.Status, validStepStatuses)
		}
		if s.Status == StepInProgress {
			inProgress = append(inProgress, strconv.Itoa(i+1))
		}
		j.list(name+" acceptance criterion", name+" acceptance criteria", s.AcceptanceCriteria)
	}
	if len(inProgress) > 1 {
		last := len(inProgress) - 1
		j.add("steps %s and %s are in_progress; at most one step may be in progress",
			strings.Join(inProgress[:last], ", "), inProgress[last])
	}

	j.text("the expected outcome", b.ExpectedOutcome)
	j.list("non-goal", "non_goals", b.NonGoals)
	j.risk(b.Risk)
	j.list("assumption", "assumptions", b.Assumptions)
	j.count("verification entries", len(b.Verification))
	for i, c := range b.Verification {
		j.check(fmt.Sprintf("verification %d", i+1), c)
	}
	j.list("reference", "references", b.References)
	j.count("risks", len(b.Risks))
	for i, r := range b.Risks {
		name := "risk " + strconv.Itoa(i+1)
		if strings.TrimSpace(r.Risk) == "" {
			j.add("%s has no description; say what could go wrong", name)
		}
		j.line(name, r.Risk)
		j.line(name+" mitigation", r.Mitigation)
	}

	j.scope("allowed_paths", b.Scope.AllowedPaths)
	j.scope("forbidden_paths", b.Scope.ForbiddenPaths)
	j.tools(b.Scope.AllowedTools)
	j.budget("max_files_changed", b.Scope.MaxFilesChanged, MaxFilesBudget)
	j.budget("max_lines_changed", b.Scope.MaxLinesChanged, MaxLinesBudget)

	if len(j) == 0 {
		return nil
	}
	return Problems(j)
}

// risk checks the plan's risk level: absent, or one of RiskLevels. A sentence there is
// most likely a risk meant for "risks", so the problem says where it goes.
func (j *judgeNotes) risk(r RiskLevel) {
	if r == "" || r.Valid() {
		return
	}
	j.add(`risk is %s; use one of "low", "medium", "high" (describe what could go wrong in "risks": [{"risk": "...", "mitigation": "..."}])`, clipQuote(string(r)))
}

// judgeNotes collects the problems of one plan.
type judgeNotes []string

func (j *judgeNotes) add(format string, args ...any) {
	*j = append(*j, fmt.Sprintf(format, args...))
}

// TextProblems checks a field people read that may span lines, as Judge checks a plan's
// summary: its length and its characters. It returns the problems, worded for the model.
func TextProblems(name, s string) []string {
	var j judgeNotes
	j.text(name, s)
	return j
}

// LineProblems checks a field shown on one line, as Judge checks a step's text.
func LineProblems(name, s string) []string {
	var j judgeNotes
	j.line(name, s)
	return j
}

// text checks a field that may span lines (the summary).
func (j *judgeNotes) text(name, s string) {
	j.length(name, s)
	j.chars(name, s, true)
}

// line checks a field that is shown on one line (title, steps, criteria, list entries).
func (j *judgeNotes) line(name, s string) {
	j.length(name, s)
	j.chars(name, s, false)
}

func (j *judgeNotes) length(name, s string) {
	if n := utf8.RuneCountInString(s); n > MaxFieldLen {
		j.add("%s is %d characters long; keep it to at most %d", name, n, MaxFieldLen)
	}
}

func (j *judgeNotes) chars(name, s string, multiLine bool) {
	if problem := textProblem(s, multiLine); problem != "" {
		j.add("%s %s", name, problem)
	}
}

// The largest budgets a plan may declare: beyond them a budget bounds nothing.
const (
	MaxFilesBudget = 10_000
	MaxLinesBudget = 1_000_000
)

// budget checks one of the scope's budgets: 0 (none) up to most.
func (j *judgeNotes) budget(name string, n, most int) {
	switch {
	case n < 0:
		j.add("scope.%s is %d; give a number from 1 to %d, or leave it out for no limit", name, n, most)
	case n > most:
		j.add("scope.%s is %d, more than the %d a budget may be; give a smaller number, or leave it out for no limit", name, n, most)
	}
}

func (j *judgeNotes) count(name string, n int) {
	if n > maxListItems {
		j.add("there are %d %s; at most %d are allowed", n, name, maxListItems)
	}
}

// list checks the entries of a list of strings, named one and many.
func (j *judgeNotes) list(one, many string, items []string) {
	j.count(many, len(items))
	for i, s := range items {
		label := fmt.Sprintf("%s %d", one, i+1)
		if strings.TrimSpace(s) == "" {
			j.add("%s is empty; remove it or fill it in", label)
		}
		j.line(label, s)
	}
}

// scope checks that every scope entry is a valid glob relative to the workspace.
func (j *judgeNotes) scope(field string, paths []string) {
	j.count("scope."+field+" entries", len(paths))
	for _, p := range paths {
		if problem := ScopePathProblem(p); problem != "" {
			j.add("scope.%s entry %s %s", field, clipQuote(p), problem)
		}
	}
}

// tools checks that scope.allowed_tools names MCP tools exactly as the gate compares them
// and a person reads them: "run_command" would allow nothing yet read as if it did, and an
// invisible or direction character would reorder the chat line.
func (j *judgeNotes) tools(names []string) {
	j.count("scope.allowed_tools entries", len(names))
	for _, n := range names {
		if !isMCPToolName(n) {
			j.add("scope.allowed_tools entry %s is not an MCP tool's name (<server>__<tool>, at most %d of A-Z, a-z, 0-9, _ and -); run_command and the file tools are allowed by scope.allowed_paths",
				clipQuote(n), maxToolNameLen)
		}
	}
}

// maxToolNameLen is the longest tool name the model APIs accept.
const maxToolNameLen = 64

// isMCPToolName reports whether name can be an MCP tool as offered to the model:
// "<server>__<tool>", both parts non-empty, within maxToolNameLen of [A-Za-z0-9_-].
func isMCPToolName(name string) bool {
	srv, tool, ok := strings.Cut(name, "__")
	if !ok || srv == "" || tool == "" || len(name) > maxToolNameLen {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// clipQuote quotes s for a problem line, cut to a readable length: a refusal goes to the
// chat or the model and must not echo a hostile 200 KB value.
func clipQuote(s string) string {
	const max = 120
	if r := []rune(s); len(r) > max {
		return strconv.Quote(string(r[:max])) + "…"
	}
	return strconv.Quote(s)
}

// ScopePathProblem says why p cannot be a scope glob, or returns "": a place outside the
// workspace is refused rather than silently never matching.
func ScopePathProblem(p string) string {
	t := strings.TrimSpace(p)
	switch {
	case t == "":
		return "is empty; remove it"
	case t != p:
		return "has leading or trailing spaces; remove them"
	case textProblem(t, false) != "":
		return textProblem(t, false)
	case strings.HasPrefix(t, "~"):
		return `starts with "~"; use a path relative to the workspace, like "docs/**"`
	case strings.HasPrefix(t, "/"), strings.HasPrefix(t, `\`), hasDriveLetter(t):
		return `is absolute; use a path relative to the workspace, like "docs/**"`
	case utf8.RuneCountInString(t) > MaxFieldLen:
		return fmt.Sprintf("is longer than %d characters", MaxFieldLen)
	}
	for _, el := range strings.FieldsFunc(t, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." {
			return `contains ".."; scope paths must stay inside the workspace`
		}
	}
	switch c := path.Clean(t); {
	case c == ".":
		return `names the workspace itself; use "**" for the whole workspace`
	case c != t:
		return fmt.Sprintf("is not a clean relative path; write %q", c)
	}
	if !doublestar.ValidatePattern(t) {
		return "is not a valid glob (check the [ ] brackets, { } braces and \\ escapes)"
	}
	// Matching {a,b} groups costs the product of their alternatives: keep them few.
	if groups, alts := strings.Count(t, "{"), strings.Count(t, ","); groups > maxScopeGroups || alts > maxScopeAlternatives {
		return fmt.Sprintf("has more than %d { } groups or %d alternatives; list the paths as separate entries", maxScopeGroups, maxScopeAlternatives)
	}
	return ""
}

func hasDriveLetter(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// textProblem says why s cannot be plan text, or returns "". The plan a person reads must
// be the plan enforced: invalid UTF-8, control and format characters (ESC sequences,
// zero-width spaces, bidi overrides) would let different texts look alike.
func textProblem(s string, multiLine bool) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8 text"
	}
	pos := 0
	for _, r := range s {
		pos++
		if multiLine && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			return fmt.Sprintf("contains a line break (character %d); keep it on one line", pos)
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("contains the invisible or control character U+%04X%s (character %d); remove it", r, runeName(r), pos)
		}
	}
	return ""
}

// runeName names the characters that turn up in attacks and copy-paste accidents.
func runeName(r rune) string {
	names := map[rune]string{
		0x00: "NUL", 0x09: "TAB", 0x1b: "ESC", 0x7f: "DEL", 0x200b: "ZERO WIDTH SPACE",
		0x200c: "ZERO WIDTH NON-JOINER", 0x200d: "ZERO WIDTH JOINER", 0x200e: "LEFT-TO-RIGHT MARK",
		0x200f: "RIGHT-TO-LEFT MARK", 0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING",
		0x202c: "POP DIRECTIONAL FORMATTING", 0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE",
		0x2060: "WORD JOINER", 0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE",
		0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE", 0xfeff: "ZERO WIDTH NO-BREAK SPACE",
		0xad: "SOFT HYPHEN",
	}
	if n, ok := names[r]; ok {
		return " (" + n + ")"
	}
	return ""
}
