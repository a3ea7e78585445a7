package plan

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxSlugLen bounds the title part of a plan file name.
const maxSlugLen = 50

// slug turns a plan title into a file-name part: lower-case ASCII letters and digits
// separated by single "-", at most 50 bytes, "untitled" when nothing is left. Letters
// outside ASCII are dropped (there is no transliteration); other characters separate words.
func slug(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(unicode.ToLower(r))
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
		default:
			if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
				b.WriteByte('-')
			}
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > maxSlugLen {
		// Cut at the last word boundary that fits (a "-" right after the limit counts).
		if i := strings.LastIndexByte(s[:maxSlugLen+1], '-'); i > 0 {
			s = s[:i]
		} else {
			s = s[:maxSlugLen]
		}
		s = strings.TrimRight(s, "-")
	}
	if s == "" {
		return "untitled"
	}
	return s
}

// FileName is the markdown file name of a plan version, e.g.
// "plan-2026-11-30-docs-cleanup-v1.md". The date is day's calendar date in its own location.
func FileName(day time.Time, title string, version int) string {
	return fmt.Sprintf("plan-%s-%s-v%d.md", day.Format("2006-01-02"), slug(title), version)
}

// stepMarker is the box of a step; one without a valid status is to do.
func stepMarker(s StepStatus) string { return cmp.Or(stepBoxes[s], "[ ]") }

// Checklist is the step list for chat progress messages: one "[x] text" line per step.
func Checklist(steps []Step) string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = stepMarker(s.Status) + " " + EscapeMarkdown(s.Text)
	}
	return strings.Join(lines, "\n")
}

// File is one plan version as its markdown file shows it. Render escapes every string
// that came from the model or a person; Footer is plangate's markdown, written as it is.
type File struct {
	Body    Body
	Version int
	Status  string // the version's status
	Phase   string // the session's phase
	Session string
	// Changes is a "## Changes from vN" section after the status line (nil: none).
	Changes *Diff
	// Grants is the "## Grants" section: every grant of the plan in words.
	Grants []Grant
	// Approvals is the "## Approvals" section (nil: none); Decision the "## Decision" one.
	Approvals []Approval
	Decision  *Decision
	Footer    string
	// Run is what plangate recorded while carrying the version out; its verification runs
	// are the "## Verification runs" section, its stop the "## Stopped" one.
	Run Run
	// Destructive marks the allowed tools it reports "(destructive)" (nil: none). The mark
	// is the gateway's knowledge, not the plan's: ParseMarkdown drops it.
	Destructive func(tool string) bool
}

// Render writes f as the plan file posted to the chat; ParseMarkdown reads the body back.
func Render(f File) []byte {
	var b bytes.Buffer
	title := EscapeMarkdown(f.Body.Title)
	if title == "" {
		title = "Untitled plan"
	}
	fmt.Fprintf(&b, "# %s\n\nVersion %d · status: %s · phase: %s · session: %s\n",
		title, f.Version, EscapeMarkdown(f.Status), EscapeMarkdown(f.Phase), EscapeMarkdown(f.Session))

	if f.Changes != nil {
		b.WriteString(f.Changes.Markdown())
	}
	writeBlock(&b, "## Summary", f.Body.Summary)
	writeBlock(&b, "## Expected outcome", f.Body.ExpectedOutcome)
	writeSpec(&b, f.Body.Spec)
	if len(f.Body.Steps) > 0 {
		b.WriteString("\n## Steps\n\n")
		for _, s := range f.Body.Steps {
			fmt.Fprintf(&b, "- %s %s\n", stepMarker(s.Status), EscapeMarkdown(s.Text))
			for _, c := range s.AcceptanceCriteria {
				box := "[ ]"
				if findCriterion(s.VerifiedCriteria, c) >= 0 {
					box = "[x]"
				}
				fmt.Fprintf(&b, "  - %s %s\n", box, EscapeMarkdown(c))
			}
		}
	}
	writeList(&b, "## Non-goals", escapedLines(f.Body.NonGoals))
	writeList(&b, "## Assumptions", escapedLines(f.Body.Assumptions))
	if f.Body.Risk != "" {
		fmt.Fprintf(&b, "\n## Risk level\n\n%s\n", EscapeMarkdown(string(f.Body.Risk)))
	}
	var risks []string
	for _, r := range f.Body.Risks {
		if line := riskLine(r); line != "" {
			risks = append(risks, line)
		}
	}
	writeList(&b, "## Risks", risks)
	writeVerification(&b, f.Body.Verification)
	writeList(&b, "## Verification runs", verificationRunLines(f.Run.Verification))
	if st := f.Run.Stop; st != nil {
		writeList(&b, "## Stopped", escapedLines(st.Lines()))
	}
	writeGrants(&b, f.Grants)
	writeScope(&b, f.Body.Scope, f.Destructive)
	writeList(&b, "## References", escapedLines(f.Body.References))
	writeList(&b, "## Approvals", approvalLines(f.Approvals))
	if d := f.Decision; d != nil {
		writeList(&b, "## Decision", decisionLines(*d))
	}

	b.WriteString("\n---\n\n")
	b.WriteString(f.Footer)
	return b.Bytes()
}

// riskSep separates a risk from its mitigation in the file. An em dash inside the risk is
// written as &#8212; (it renders the same), so the first " — " is always the separator; a
// risk that names only a mitigation starts with "— ".
const riskSep = " — "

func riskLine(r Risk) string {
	line := strings.ReplaceAll(EscapeMarkdown(r.Risk), "—", entityEmDash)
	m := EscapeMarkdown(r.Mitigation)
	switch {
	case m == "":
	case line == "":
		line = strings.TrimLeft(riskSep, " ") + m
	default:
		line += riskSep + m
	}
	return line
}

// writeList writes lines as bullets under a heading line ("## Risks", "### Features").
func writeList(b *bytes.Buffer, heading string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s\n\n", heading)
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
}

// writeBlock writes multi-line text under a heading line, or nothing when it is empty.
func writeBlock(b *bytes.Buffer, heading, text string) {
	if e := escapeMarkdownBlock(text); e != "" {
		fmt.Fprintf(b, "\n%s\n\n%s\n", heading, e)
	}
}

// escapedLines escapes list entries and drops the ones left empty.
func escapedLines(items []string) []string {
	var out []string
	for _, it := range items {
		if e := EscapeMarkdown(it); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// writeGrants writes "## Grants": every grant of the plan in words. It is plangate's
// section, skipped when an edited file is read back: the scope is the truth.
func writeGrants(b *bytes.Buffer, gs []Grant) {
	lines := make([]string, len(gs))
	for i, g := range gs {
		lines[i] = g.Kind + ": " + EscapeMarkdown(g.Words)
	}
	writeList(b, "## Grants", lines)
}

// destructiveMark follows a destructive tool's code span in "Allowed tools" (only a
// verbatim name is marked, so the parser can tell the mark from the name).
const destructiveMark = " (destructive)"

// scopeParts are the labelled lists of the file's "## Scope" section, in their order.
func scopeParts(sc *Scope) []scopePart {
	return []scopePart{{scopeAllowed, &sc.AllowedPaths}, {scopeForbidden, &sc.ForbiddenPaths}, {scopeTools, &sc.AllowedTools}}
}

type scopePart struct {
	label string
	paths *[]string
}

func writeScope(b *bytes.Buffer, sc Scope, destructive func(string) bool) {
	budget := budgetLine(sc)
	if len(sc.AllowedPaths) == 0 && len(sc.ForbiddenPaths) == 0 && len(sc.AllowedTools) == 0 && budget == "" {
		return
	}
	b.WriteString("\n## Scope\n")
	if budget != "" {
		fmt.Fprintf(b, "\n%s\n", budget)
	}
	for _, part := range scopeParts(&sc) {
		if len(*part.paths) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s:\n\n", part.label)
		for _, p := range *part.paths {
			mark := ""
			if part.label == scopeTools && destructive != nil && codeSpanVerbatim(p) && destructive(p) {
				mark = destructiveMark
			}
			fmt.Fprintf(b, "- %s%s\n", codeSpan(p), mark)
		}
	}
}

// codeSpan shows a scope glob verbatim in a code span, where * and _ need no escaping;
// text that could break out of the span is escaped as ordinary text instead.
func codeSpan(s string) string {
	if !codeSpanVerbatim(s) {
		return EscapeMarkdown(s)
	}
	var b strings.Builder
	b.WriteByte('`')
	rs := []rune(s)
	for i, r := range rs {
		b.WriteRune(r)
		if r == '@' && mentionAt(rs, i) {
			b.WriteRune(zeroWidthSpace)
		}
	}
	b.WriteByte('`')
	return b.String()
}

const zeroWidthSpace = '\u200b'

// EscapeMarkdown makes one line of untrusted text safe in markdown: white space collapses
// to single spaces, control and bidi-override characters are dropped, markdown punctuation
// is backslash-escaped so the text opens no markup, and mentions (@everyone, @name, <@id>,
// <!channel>) get a zero-width space after the @ or ! so they never ping.
func EscapeMarkdown(s string) string {
	return escapeMarkdownLine(strings.Join(strings.Fields(stripUnsafe(s)), " "))
}

// escapeMarkdownBlock escapes multi-line text (the summary): each line is escaped like
// EscapeMarkdown, and paragraph breaks survive as single blank lines.
func escapeMarkdownBlock(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	return paragraphs(strings.Split(s, "\n"), EscapeMarkdown)
}

// paragraphs maps each line with f and joins the results, a run of empty ones kept as a
// single blank line between paragraphs (none at the start or the end).
func paragraphs(lines []string, f func(string) string) string {
	var out []string
	blank := false
	for _, line := range lines {
		e := f(line)
		if e == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, e)
	}
	return strings.Join(out, "\n")
}

// isUnsafeRune reports characters that are dropped from untrusted text: controls other than
// white space, and the bidi controls that can make text read differently than it is stored.
func isUnsafeRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case unicode.IsControl(r):
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
		return true
	}
	return false
}

func stripUnsafe(s string) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	if strings.IndexFunc(s, isUnsafeRune) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isUnsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

// escapeMarkdownLine escapes one line that has no line breaks and no surrounding spaces.
func escapeMarkdownLine(s string) string {
	if s == "" {
		return ""
	}
	rs := []rune(s)
	var b strings.Builder
	// Block markers only count at the start of a line.
	switch rs[0] {
	case '#', '-', '+', '=':
		b.WriteByte('\\')
	}
	digits := 0
	for digits < len(rs) && rs[digits] >= '0' && rs[digits] <= '9' {
		digits++
	}
	for i, r := range rs {
		switch r {
		case '\\', '`', '*', '[', ']', '<', '>', '|', '~':
			b.WriteByte('\\')
		case '&':
			// "&#64;everyone" would render as a mention after conversion.
			if entityAt(rs, i) {
				b.WriteByte('\\')
			}
		case '_':
			// An underscore inside a word never makes emphasis; leaving it keeps
			// identifiers and file names readable in the raw file.
			if !(i > 0 && isWordRune(rs[i-1]) && i+1 < len(rs) && isWordRune(rs[i+1])) {
				b.WriteByte('\\')
			}
		case '.', ')':
			if digits > 0 && i == digits { // "1." or "1)" would start an ordered list
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
		if (r == '@' && mentionAt(rs, i)) || (r == '!' && i > 0 && rs[i-1] == '<') {
			b.WriteRune(zeroWidthSpace)
		}
	}
	return b.String()
}

// mentionAt reports whether the @ at rs[i] would start a mention: not inside a word (so
// e-mail addresses stay intact) and followed by a name, an id or a Discord <@&id> / <@!id>.
func mentionAt(rs []rune, i int) bool {
	if i > 0 && isWordRune(rs[i-1]) {
		return false
	}
	if i+1 >= len(rs) {
		return false
	}
	next := rs[i+1]
	return isWordRune(next) || next == '_' || next == '&' || next == '!'
}

// entityAt reports whether rs[i] ('&') starts an HTML entity or character reference.
func entityAt(rs []rune, i int) bool {
	for j := i + 1; j < len(rs) && j <= i+33; j++ {
		switch r := rs[j]; {
		case r == ';':
			return j > i+1
		case r == '#' && j == i+1:
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		default:
			return false
		}
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// The sections of a plan file that plangate writes about a version rather than the
// plan's body: who approved it and how it was decided. ParseMarkdown skips them.

// approvalLines lists who approved a version, one line per approval.
func approvalLines(approvals []Approval) []string {
	lines := make([]string, 0, len(approvals))
	for _, a := range approvals {
		line := personLabel(a.By, a.ByName)
		if !a.At.IsZero() {
			line += " at " + a.At.UTC().Format("2006-01-02 15:04 UTC")
		}
		lines = append(lines, line)
	}
	return lines
}

// personLabel is "Name (id)", or the id alone when the name adds nothing, escaped.
func personLabel(id, name string) string {
	who := EscapeMarkdown(id)
	if n := EscapeMarkdown(name); n != "" && n != who {
		who = n + " (" + who + ")"
	}
	return who
}

func decisionLines(d Decision) []string {
	lines := []string{"Outcome: " + EscapeMarkdown(d.Outcome)}
	if who := personLabel(d.By, d.ByName); who != "" {
		lines = append(lines, "By: "+who)
	}
	if !d.At.IsZero() {
		lines = append(lines, "At: "+d.At.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if ch := EscapeMarkdown(d.Channel); ch != "" {
		lines = append(lines, "Channel: "+ch)
	}
	if fb := EscapeMarkdown(d.Feedback); fb != "" {
		lines = append(lines, "Feedback: "+fb)
	}
	if st := EscapeMarkdown(d.Stale); st != "" {
		lines = append(lines, "Accepted on a changed workspace: "+st)
	}
	return lines
}
