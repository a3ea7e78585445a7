package plan

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxFileBytes bounds an edited plan file.
const MaxFileBytes = 256 << 10

// ParseError says which line of an edited plan file is wrong and how to fix it; Line is
// 0 for a problem with the whole file. Its text is shown to the person who sent the file.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	msg := clipLine(e.Msg, maxProblemLen) // it may quote a hostile 200 KB heading
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return msg
}

// Scope labels in the file.
const (
	scopeAllowed   = "Allowed"
	scopeForbidden = "Forbidden"
	scopeTools     = "Allowed tools"
)

// section kinds of the file.
const (
	secNone = iota
	secSummary
	secSpec
	secSteps
	secAssumptions
	secRisks
	secVerification
	secScope
	secReferences
	secOutcome
	secNonGoals
	secRiskLevel
	secSkipped // Approvals, Decision, Grants, Verification runs, Stopped, Changes from vN: written by plangate, not part of the body
)

var sectionNames = map[string]int{
	"summary": secSummary, strings.ToLower(specHeading): secSpec, "steps": secSteps,
	"assumptions": secAssumptions, "risks": secRisks, "verification": secVerification,
	"scope": secScope, "references": secReferences, "approvals": secSkipped, "decision": secSkipped,
	"grants": secSkipped, "verification runs": secSkipped, "stopped": secSkipped, "expected outcome": secOutcome, "non-goals": secNonGoals, "risk level": secRiskLevel,
}

const knownSections = "Summary, Expected outcome, Product spec, Steps, Non-goals, Assumptions, Risk level, Risks, Verification, Scope, References"

// ParseMarkdown reads a plan file a person edited (docs/design.md §13), in the layout
// Render writes, back into a plan body. plangate's own parts (status line, decision,
// changes, footer) are ignored; the escaping is undone and white space collapsed as the
// writer does, so what it accepts renders and parses to itself. Step ids are "1", "2", ...
// in file order. It checks the form only; Judge checks the content.
func ParseMarkdown(b []byte) (Body, error) {
	lines, err := planLines(b)
	if err != nil {
		return Body{}, err
	}
	p := planParser{seen: map[int]bool{}}
	for i, line := range lines {
		p.n = i + 1
		if done := p.line(line); done || p.err != nil {
			break
		}
	}
	if p.err != nil {
		return Body{}, p.err
	}
	if !p.titled {
		return Body{}, &ParseError{Msg: "the file has no title; a plan file starts with a line like `# Title`"}
	}
	p.flushBlock()
	for i := range p.body.Steps {
		// The writer checks every criterion that matches a verified one, ignoring case.
		s := &p.body.Steps[i]
		verified := s.VerifiedCriteria
		s.VerifiedCriteria = nil
		for _, c := range s.AcceptanceCriteria {
			if findCriterion(verified, c) >= 0 {
				s.VerifiedCriteria = append(s.VerifiedCriteria, c)
			}
		}
	}
	return p.body, nil
}

// planLines checks the file as a whole and splits it into lines without their endings.
func planLines(b []byte) ([]string, error) {
	if len(b) > MaxFileBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("the file is %d KB; a plan file may be at most %d KB", (len(b)+1023)/1024, MaxFileBytes>>10)}
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // a byte order mark from an editor
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !utf8.ValidString(l) {
			return nil, &ParseError{Line: i + 1, Msg: "is not valid UTF-8 text; save the file as UTF-8"}
		}
		for _, r := range l {
			if r != '\t' && unicode.IsControl(r) {
				return nil, &ParseError{Line: i + 1, Msg: fmt.Sprintf("contains the control character U+%04X%s; a plan file is plain text", r, runeName(r))}
			}
		}
	}
	return lines, nil
}

// planParser holds the state of one parse.
type planParser struct {
	body   Body
	n      int // current line number
	err    error
	titled bool

	sec      int
	sub      string // sub-section of the spec
	seen     map[int]bool
	subSeen  map[string]bool
	preamble bool      // between the title and the first section: only the status line
	list     *[]string // where the items of a list section or spec part go
	scopeTo  *[]string
	blockTo  *string  // where the text part being collected goes (the summary, a spec part)
	block    []string // its lines
}

func (p *planParser) fail(format string, args ...any) {
	p.err = &ParseError{Line: p.n, Msg: fmt.Sprintf(format, args...)}
}

// line handles one line; it returns true at the footer, where the plan ends.
func (p *planParser) line(line string) bool {
	trimmed := strings.TrimSpace(line)
	if !p.titled {
		switch {
		case trimmed == "":
		case strings.HasPrefix(line, "# "):
			p.titled = true
			p.preamble = true
			if p.body.Title = fileText(line[2:], false); p.body.Title == "" {
				p.fail("the title is empty; write it after the `# `")
			}
		default:
			p.fail("a plan file starts with its title, a line like `# Title`")
		}
		return false
	}
	switch {
	case trimmed == "---":
		return true
	case strings.HasPrefix(line, "## "):
		p.heading(strings.TrimSpace(line[3:]))
	case strings.HasPrefix(line, "### "):
		p.subHeading(strings.TrimSpace(line[4:]))
	case strings.HasPrefix(line, "# "):
		p.fail("a plan has one title; make this a section (`## Name`) or remove the `#`")
	case p.preamble:
		if trimmed != "" && !strings.HasPrefix(trimmed, "Version ") {
			p.fail("text before the first section; put it under `## Summary`")
		}
	default:
		p.content(line, trimmed)
	}
	return false
}

func (p *planParser) heading(name string) {
	p.flushBlock()
	p.preamble, p.sub, p.list, p.scopeTo, p.blockTo = false, "", nil, nil, nil
	sec, ok := sectionNames[strings.ToLower(name)]
	if !ok && strings.HasPrefix(strings.ToLower(name), "changes from") {
		sec, ok = secSkipped, true
	}
	switch {
	case !ok:
		p.fail("unknown section %q; the sections are %s", name, knownSections)
	case sec != secSkipped && p.seen[sec]:
		p.fail("section %q appears twice; merge the two", name)
	}
	p.seen[sec] = true
	p.sec = sec
	switch sec {
	case secSummary:
		p.blockTo = &p.body.Summary
	case secAssumptions:
		p.list = &p.body.Assumptions
	case secOutcome:
		p.blockTo = &p.body.ExpectedOutcome
	case secNonGoals:
		p.list = &p.body.NonGoals
	case secReferences:
		p.list = &p.body.References
	case secSpec:
		p.body.Spec = &ProductSpec{}
		p.subSeen = map[string]bool{}
	}
}

func (p *planParser) subHeading(name string) {
	if p.sec == secSkipped {
		return
	}
	if p.sec != secSpec {
		p.fail("a `###` heading belongs under `## %s` only", specHeading)
		return
	}
	p.flushBlock()
	for _, known := range []string{specOverview, specFeatures, specUserStories, specTechStack, specDesign} {
		if strings.EqualFold(name, known) {
			if p.subSeen[known] {
				p.fail("%q appears twice in the product spec; merge the two", known)
			}
			p.subSeen[known] = true
			p.sub = known
			p.specPart()
			return
		}
	}
	p.fail("unknown part %q of the product spec; the parts are %s, %s, %s, %s, %s",
		name, specOverview, specFeatures, specUserStories, specTechStack, specDesign)
}

// specPart points the list or text targets at the spec part just begun.
func (p *planParser) specPart() {
	sp := p.body.Spec
	p.list, p.blockTo = nil, nil
	switch p.sub {
	case specOverview:
		p.blockTo = &sp.Overview
	case specDesign:
		p.blockTo = &sp.DesignDirection
	case specUserStories:
		p.list = &sp.UserStories
	case specTechStack:
		p.list = &sp.TechStack
	}
}

// content handles a line inside a section.
func (p *planParser) content(line, trimmed string) {
	switch {
	case p.sec == secSkipped:
	case p.blockTo != nil:
		p.block = append(p.block, line)
	case trimmed == "":
	case p.sec == secSteps:
		p.stepLine(line, trimmed)
	case p.sec == secScope:
		p.scopeLine(trimmed)
	case p.sec == secVerification:
		p.verificationLine(trimmed)
	case p.sec == secRiskLevel:
		p.riskLevelLine(trimmed)
	case p.sec == secSpec && p.sub == "":
		p.fail("text in the product spec must be under one of its `###` parts, such as `### %s`", specOverview)
	default:
		p.listLine(trimmed)
	}
}

// listLine reads an entry of a list section or of a spec part made of items.
func (p *planParser) listLine(trimmed string) {
	item, ok := bulletText(trimmed)
	switch {
	case !ok && p.sec == secSpec:
		p.fail("an entry of %q must be a list item like `- text`", p.sub)
	case !ok:
		p.fail("an entry of this section must be a list item like `- text`")
	case p.sec == secRisks:
		if r := parseRisk(item); r != (Risk{}) {
			p.body.Risks = append(p.body.Risks, r)
		}
	case p.sub == specFeatures:
		if item == "" {
			return
		}
		f, problem := parseFeature(item)
		if problem != "" {
			p.fail("%s", problem)
			return
		}
		p.body.Spec.Features = append(p.body.Spec.Features, f)
	default:
		if t := fileText(item, false); t != "" {
			*p.list = append(*p.list, t)
		}
	}
}

// flushBlock stores the collected lines of a text part when the part ends.
func (p *planParser) flushBlock() {
	if p.block != nil {
		*p.blockTo = fileBlock(p.block)
		p.block = nil
	}
}

// stepLine reads a step ("- [ ] text") or, indented, one of its acceptance criteria.
func (p *planParser) stepLine(line, trimmed string) {
	const example = "a step must be a checklist item like `- [ ] text`"
	indented := line[0] == ' ' || line[0] == '\t'
	item, ok := bulletText(trimmed)
	if !ok {
		if indented {
			p.fail("an acceptance criterion must be an indented list item like `  - [ ] text`")
		} else {
			p.fail("%s", example)
		}
		return
	}
	box, text, boxed := checkbox(item)
	if !indented {
		if !boxed {
			p.fail("%s", example)
			return
		}
		st, ok := boxStatus(box)
		if !ok {
			p.fail("unknown box [%s]; use [ ] to do, [>] in progress, [x] done or [~] cancelled", box)
			return
		}
		if text = fileText(text, false); text == "" {
			p.fail("the step has no text; say what it does, or remove the line")
			return
		}
		p.body.Steps = append(p.body.Steps, Step{ID: strconv.Itoa(len(p.body.Steps) + 1), Text: text, Status: st})
		return
	}
	if len(p.body.Steps) == 0 {
		p.fail("an acceptance criterion (an indented item) must follow a step")
		return
	}
	if !boxed {
		box, text = " ", item
	}
	c := fileText(text, false)
	if c == "" {
		return
	}
	s := &p.body.Steps[len(p.body.Steps)-1]
	s.AcceptanceCriteria = append(s.AcceptanceCriteria, c)
	switch box {
	case "x", "X":
		s.VerifiedCriteria = append(s.VerifiedCriteria, c)
	case " ":
	default:
		p.fail("an acceptance criterion is [ ] to check or [x] checked, not [%s]", box)
	}
}

func (p *planParser) scopeLine(trimmed string) {
	if ok, err := parseBudgetLine(trimmed, &p.body.Scope); ok {
		if err != nil {
			p.fail("%v", err)
		}
		return
	}
	label := strings.TrimSuffix(trimmed, ":")
	for _, part := range scopeParts(&p.body.Scope) {
		if strings.EqualFold(label, part.label) {
			p.scopeTo = part.paths
			return
		}
	}
	item, ok := bulletText(trimmed)
	switch {
	case !ok:
		p.fail("the scope holds `Allowed:`, `Forbidden:` and `Allowed tools:` lines, each followed by list items like `- docs/**`")
	case p.scopeTo == nil:
		p.fail("put the path under `Allowed:` or `Forbidden:`")
	default:
		if p.scopeTo == &p.body.Scope.AllowedTools {
			item = unmarkTool(item)
		}
		if s := scopeText(item); s != "" {
			*p.scopeTo = append(*p.scopeTo, s)
		}
	}
}

// verificationLine reads an entry of "## Verification": a check in words, or a command as
// CheckLine writes it (a code span, after a name and ": "). plangate's notes are skipped.
func (p *planParser) verificationLine(trimmed string) {
	switch trimmed {
	case NoVerificationNote, WordsOnlyNote, CommandsNote:
		return
	}
	item, ok := bulletText(trimmed)
	if !ok {
		p.fail("an entry of this section must be a list item: - text (a check in words) or - tests: `go test ./...` (a command plangate runs)")
		return
	}
	c, problem := parseCheck(item)
	switch {
	case problem != "":
		p.fail("%s", problem)
	case c.IsCommand() || c.Text != "":
		p.body.Verification = append(p.body.Verification, c)
	}
}

// parseCheck reads one verification item. A check in words has no code span: the writer
// escapes every backtick of its text.
func parseCheck(item string) (Check, string) {
	if !strings.HasSuffix(item, "`") {
		return Check{Text: fileText(item, false)}, ""
	}
	open := -1
	for i := 0; i < len(item)-1; i++ {
		switch item[i] {
		case '\\':
			i++
		case '`':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		return Check{Text: fileText(item, false)}, ""
	}
	name, span := strings.TrimSpace(item[:open]), item[open+1:len(item)-1]
	if name != "" {
		n, ok := strings.CutSuffix(name, ":")
		if !ok {
			return Check{}, "a command is written as - name: `program arg ...`; put a \":\" after the name"
		}
		name = fileText(n, false)
	}
	argv, ok := parseArgvSpan(unguardMentions(span))
	if !ok || strings.Contains(span, "`") {
		return Check{}, "the command in the code span is not a program and its arguments; write them separated by spaces, or as a JSON array of strings like `[\"go\", \"test\", \"./...\"]`"
	}
	return Check{Name: name, Argv: argv}, ""
}

// unmarkTool drops the destructive mark the writer puts after a tool's code span.
func unmarkTool(item string) string {
	rest, ok := strings.CutSuffix(item, strings.TrimSpace(destructiveMark))
	rest = strings.TrimRight(rest, " \t")
	if ok && len(rest) >= 2 && rest[0] == '`' && rest[len(rest)-1] == '`' {
		return rest
	}
	return item
}

// bulletText returns the text of a list item ("- text" or "* text").
func bulletText(trimmed string) (string, bool) {
	if trimmed == "-" || trimmed == "*" {
		return "", true
	}
	if len(trimmed) >= 2 && (trimmed[0] == '-' || trimmed[0] == '*') && (trimmed[1] == ' ' || trimmed[1] == '\t') {
		return strings.TrimSpace(trimmed[2:]), true
	}
	return "", false
}

// checkbox splits "[x] text" into the box's content and the text.
func checkbox(item string) (box, text string, ok bool) {
	if len(item) < 3 || item[0] != '[' || item[2] != ']' {
		return "", item, false
	}
	rest := item[3:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", item, false
	}
	return item[1:2], strings.TrimSpace(rest), true
}

// boxStatus reads a step's box (without its brackets); an X is an x.
func boxStatus(box string) (StepStatus, bool) {
	for st, b := range stepBoxes {
		if b == "["+strings.ToLower(box)+"]" {
			return st, true
		}
	}
	return "", false
}

// riskLevelLine reads the one line of "## Risk level": low, medium or high.
func (p *planParser) riskLevelLine(trimmed string) {
	r := RiskLevel(strings.ToLower(fileText(trimmed, false)))
	switch {
	case p.body.Risk != "":
		p.fail("the risk level is one line: low, medium or high")
	case !r.Valid():
		p.fail("the risk level is %s; write low, medium or high", clipQuote(trimmed))
	default:
		p.body.Risk = r
	}
}

// parseRisk splits a risk line at its first " — " (see riskLine).
func parseRisk(raw string) Risk {
	raw = strings.Join(strings.Fields(raw), " ")
	dash := strings.TrimSpace(riskSep)
	if raw == dash || strings.HasPrefix(raw, dash+" ") {
		return Risk{Mitigation: fileText(strings.TrimPrefix(raw, dash), false)}
	}
	risk, m, _ := strings.Cut(raw, riskSep)
	return Risk{Risk: fileText(risk, true), Mitigation: fileText(m, false)}
}
