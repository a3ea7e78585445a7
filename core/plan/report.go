package plan

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Report is what the execution of a version did, written by plangate when the version
// completes or stops (docs/design.md §13): the files changed, by the step in progress when
// they changed, the commands run, the verification, the steps not done and the workspace's
// fingerprints before and after. It is built from what plangate recorded (Run.Changed, the
// tool_ran audit rows, Run.Verification, Run.Stop) and the workspace at the end, never
// from the model's words, and holds no time but the stored ones.
type Report struct {
	// Outcome is "completed" or the StopKind the execution stopped with.
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"` // when it completed or stopped, as recorded
	// Measured is false when plangate kept no fingerprint of the workspace for this
	// version: files and lines are then unknown, not zero.
	Measured bool `json:"measured"`
	// Steps are the plan's steps in order, each with what changed while it was in
	// progress; a last group with Step "" holds what changed while none was.
	Steps []ReportStep `json:"steps"`
	// Files is every file the agent's calls changed, from the workspace it was accepted on
	// to the workspace at the end, in the order first changed.
	Files        []FileLines   `json:"files"`
	Verification *Verification `json:"verification,omitempty"`
	// NotDone are the steps the plan said that did not happen: cancelled, or still open
	// when the execution stopped.
	NotDone []NotDone `json:"not_done"`
	// Outside are the paths that changed outside the agent's calls under this version
	// (empty: none).
	Outside []string  `json:"outside"`
	Before  *TreeMark `json:"before,omitempty"` // the workspace the version was accepted on
	After   *TreeMark `json:"after,omitempty"`  // the workspace when the report was made
	// Tokens are the version's model tokens (its planning and execution) when the report
	// was made; nil in a report made before they were counted.
	Tokens *Tokens `json:"tokens,omitempty"`
}

// ReportStep is one step of the plan with the files changed and the commands run while it
// was in progress.
type ReportStep struct {
	Step     string          `json:"step"` // the step's id; "" for calls made while no step was in progress
	Text     string          `json:"text"`
	Status   StepStatus      `json:"status"`
	Files    []FileLines     `json:"files"`
	Commands []ReportCommand `json:"commands"`
}

// FileLines is one changed file with its lines added and removed. Counted is false for a
// file whose lines plangate could not count (binary, over 1 MiB, a link).
type FileLines struct {
	Path    string     `json:"path"`
	Kind    ChangeKind `json:"kind"`
	Added   int        `json:"added"`
	Removed int        `json:"removed"`
	Counted bool       `json:"counted"`
}

// ReportCommand is one run_command the agent's calls ran, with its exit code (nil when the
// command did not run to an exit: it timed out, hit a limit or could not start; Why says).
type ReportCommand struct {
	Step     string `json:"step,omitempty"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exit_code"`
	Why      string `json:"why,omitempty"`
}

// NotDone is a step of the plan that did not happen, with why.
type NotDone struct {
	Step   string     `json:"step"`
	Text   string     `json:"text"`
	Status StepStatus `json:"status"`
	Reason string     `json:"reason"`
}

// TreeMark is a workspace fingerprint in short: its hash, size and git's HEAD.
type TreeMark struct {
	Hash  string `json:"hash"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	Head  string `json:"head,omitempty"`
	Ref   string `json:"ref,omitempty"`
}

// MarkOf is tree's mark; nil for no tree.
func MarkOf(t *Tree) *TreeMark {
	if t == nil {
		return nil
	}
	return &TreeMark{Hash: t.Hash, Files: t.Count, Bytes: t.Bytes, Head: t.Head, Ref: t.Ref}
}

// CallChange is what one mutating call changed in the workspace, counted from the
// fingerprints around it, and the step in progress when it ran ("" for none).
type CallChange struct {
	Step  string      `json:"step,omitempty"`
	Call  string      `json:"call"`
	Files []FileLines `json:"files"`
}

// ReportFileName is the report's file name beside the plan file name: plan-…-vN-report.md.
func ReportFileName(planFile string) string {
	return strings.TrimSuffix(planFile, ".md") + "-report.md"
}

// Totals are the report's files and lines added and removed in all.
func (r Report) Totals() (files, added, removed int) {
	for _, f := range r.Files {
		added += f.Added
		removed += f.Removed
	}
	return len(r.Files), added, removed
}

// Commands are every command of the report, in the order they ran.
func (r Report) Commands() []ReportCommand {
	var out []ReportCommand
	for _, s := range r.Steps {
		out = append(out, s.Commands...)
	}
	return out
}

// Summary is the report in one line, for the chat: "2 files changed (+10 −4), 1 command,
// verification passed, nothing outside the plan".
func (r Report) Summary() string {
	var parts []string
	if r.Measured {
		n, a, d := r.Totals()
		parts = append(parts, fmt.Sprintf("%s changed (+%d −%d)", plural(n, "file", "files"), a, d))
	} else {
		parts = append(parts, "files not measured")
	}
	parts = append(parts, plural(len(r.Commands()), "command", "commands"))
	if v := r.Verification; v != nil {
		parts = append(parts, "verification "+map[bool]string{true: "passed", false: "failed"}[v.Passed])
	}
	if len(r.NotDone) > 0 {
		parts = append(parts, plural(len(r.NotDone), "step", "steps")+" not done")
	}
	if len(r.Outside) == 0 {
		parts = append(parts, "nothing outside the plan")
	} else {
		parts = append(parts, plural(len(r.Outside), "file", "files")+" changed outside the plan")
	}
	if r.Tokens != nil {
		parts = append(parts, r.Tokens.Words())
	}
	return strings.Join(parts, ", ")
}

// Markdown is the report file of version version titled title: the same data as the JSON,
// model text escaped.
func (r Report) Markdown(version int, title string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Report: plan v%d — %s\n\n", version, EscapeMarkdown(title))
	if r.Outcome == "completed" {
		fmt.Fprintf(&b, "Completed at %s.\n", stamp(r.At))
	} else {
		fmt.Fprintf(&b, "Stopped at %s: %s.\n", stamp(r.At), strings.ReplaceAll(r.Outcome, "_", " "))
	}
	if r.Tokens != nil {
		fmt.Fprintf(&b, "Model tokens: %s (planning and execution of this version).\n", r.Tokens.Words())
	}
	b.WriteString("\n## Changes by step\n\n")
	for _, s := range r.Steps {
		if s.Step == "" {
			b.WriteString("### While no step was in progress\n\n")
		} else {
			fmt.Fprintf(&b, "### %s %s. %s\n\n", stepMarker(s.Status), s.Step, EscapeMarkdown(s.Text))
		}
		if len(s.Files) == 0 && len(s.Commands) == 0 {
			b.WriteString("Nothing changed.\n\n")
			continue
		}
		for _, f := range s.Files {
			fmt.Fprintf(&b, "- %s\n", f.line())
		}
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "- ran %s\n", c.line())
		}
		b.WriteString("\n")
	}
	b.WriteString("## Files changed\n\n")
	switch {
	case !r.Measured:
		b.WriteString("Not measured: plangate kept no fingerprint of this workspace.\n")
	case len(r.Files) == 0:
		b.WriteString("None.\n")
	default:
		for _, f := range r.Files {
			fmt.Fprintf(&b, "- %s\n", f.line())
		}
		n, a, d := r.Totals()
		fmt.Fprintf(&b, "\nIn all: %s, +%d −%d lines.\n", plural(n, "file", "files"), a, d)
	}
	b.WriteString("\n## Commands run\n\n")
	if cmds := r.Commands(); len(cmds) == 0 {
		b.WriteString("None.\n")
	} else {
		for _, c := range cmds {
			fmt.Fprintf(&b, "- %s\n", c.line())
		}
	}
	b.WriteString("\n## Verification\n\n")
	if v := r.Verification; v == nil {
		b.WriteString("None: the plan names no checks plangate runs.\n")
	} else {
		fmt.Fprintf(&b, "%s\n\n", VerificationSummary(*v))
		for _, run := range v.Runs {
			fmt.Fprintf(&b, "- %s: %s\n", EscapeMarkdown(run.Label()), EscapeMarkdown(run.Outcome()))
		}
	}
	b.WriteString("\n## Not done\n\n")
	if len(r.NotDone) == 0 {
		b.WriteString("None.\n")
	} else {
		for _, n := range r.NotDone {
			fmt.Fprintf(&b, "- %s. %s — %s: %s\n", n.Step, EscapeMarkdown(n.Text), n.Status, EscapeMarkdown(n.Reason))
		}
	}
	b.WriteString("\n## Outside the accepted version\n\n")
	if len(r.Outside) == 0 {
		b.WriteString("None.\n")
	} else {
		for _, p := range r.Outside {
			fmt.Fprintf(&b, "- %s changed outside the agent's calls\n", EscapeMarkdown(p))
		}
	}
	b.WriteString("\n## Workspace\n\n")
	fmt.Fprintf(&b, "- before (accepted): %s\n", r.Before.words())
	fmt.Fprintf(&b, "- after: %s\n", r.After.words())
	return b.Bytes()
}

// line is "README.md: +3 −1" ("added", "removed" and uncounted files say so).
func (f FileLines) line() string {
	s := EscapeMarkdown(f.Path) + ": "
	if !f.Counted {
		s += "lines not counted"
	} else {
		s += fmt.Sprintf("+%d −%d", f.Added, f.Removed)
	}
	if f.Kind == FileAdded || f.Kind == FileRemoved {
		s += " (" + string(f.Kind) + ")"
	}
	return s
}

// line is "`sh -c make` — exit code 0".
func (c ReportCommand) line() string {
	s := EscapeMarkdown(c.Command) + " — "
	if c.ExitCode != nil {
		return s + "exit code " + strconv.Itoa(*c.ExitCode)
	}
	return s + "no exit code: " + EscapeMarkdown(c.Why)
}

// words is the mark in words: "a1b2c3d4e5f6, 3 files, 120 bytes, git 0123abcd on main".
func (m *TreeMark) words() string {
	if m == nil {
		return "not recorded"
	}
	short := m.Hash
	if len(short) > 12 {
		short = short[:12]
	}
	s := fmt.Sprintf("%s, %s, %s", short, plural(m.Files, "file", "files"), plural(int(m.Bytes), "byte", "bytes"))
	if m.Head != "" {
		head := m.Head
		if len(head) > 12 {
			head = head[:12]
		}
		s += ", git " + head
		if m.Ref != "" {
			s += " on " + EscapeMarkdown(m.Ref)
		}
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
