package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Pinned is the accepted version's contract that every executing turn carries in its
// system prompt, apart from the history window: the title, the steps and their criteria,
// the scope, the budgets, the verification and the stop conditions. It holds nothing
// update_plan changes, so it is the same bytes for the whole execution and the prompt's
// prefix stays cacheable; where the steps stand is Progress, sent after the history.
// Fields the body does not set are named as unset rather than left out, so the model
// knows there is no limit it missed.
func Pinned(version int, b Body) string {
	var w strings.Builder
	fmt.Fprintf(&w, "ACCEPTED PLAN v%d (pinned; the workspace root's PLAN.md and PLAN.json are read-only copies of it; where its steps stand comes last, as PLAN PROGRESS)\n", version)
	w.WriteString("Title: " + b.Title + "\n")
	if b.Summary != "" {
		w.WriteString("Summary: " + b.Summary + "\n")
	}
	w.WriteString("Steps:\n")
	for i, s := range b.Steps {
		fmt.Fprintf(&w, "%d. %s%s\n", i+1, stepID(i, s), s.Text)
		if len(s.AcceptanceCriteria) > 0 {
			w.WriteString("   criteria: " + strings.Join(s.AcceptanceCriteria, "; ") + "\n")
		}
	}
	sc := b.Scope
	w.WriteString("Scope:\n")
	w.WriteString("  may change: " + listOr(sc.AllowedPaths, "no files") + "\n")
	if len(sc.ForbiddenPaths) > 0 {
		w.WriteString("  never touch: " + strings.Join(sc.ForbiddenPaths, ", ") + "\n")
	}
	w.WriteString("  mutating tools: " + listOr(sc.AllowedTools, "none beyond the workspace tools") + "\n")
	w.WriteString("Budgets: files changed " + limit(sc.MaxFilesChanged) + ", lines changed " + limit(sc.MaxLinesChanged) + " (counted by plangate from the workspace)\n")
	if sc.Operator != nil {
		w.WriteString("Operator limits (inherited by every plan, included above): " + sc.Operator.Words() + "\n")
	}
	w.WriteString("Verification: " + pinnedChecks(b.Verification) + "\n")
	w.WriteString("Stops: plangate stops the turn and asks a person when the turn runs out of model calls, the same failure repeats, a call leaves the scope or goes over a budget, the workspace changes under you, verification fails, a destructive command is requested or a secret is detected. Going on needs a person's message; a wider scope needs a new version.")
	return w.String()
}

// Progress is where the accepted version's steps stand: each step's status, what was
// verified, why a step was cancelled. An executing request carries it as its last
// message, after the history, so a step's change costs the cache only this message.
func Progress(version int, b Body) string {
	var w strings.Builder
	fmt.Fprintf(&w, "PLAN PROGRESS v%d (plangate's record of the accepted plan's steps now, not a message from a person)", version)
	for i, s := range b.Steps {
		fmt.Fprintf(&w, "\n%d. %s %s%s", i+1, stepMarker(s.Status), stepID(i, s), s.Text)
		if len(s.VerifiedCriteria) > 0 {
			w.WriteString("\n   verified: " + strings.Join(s.VerifiedCriteria, "; "))
		}
		if s.CancelReason != "" {
			w.WriteString("\n   cancelled: " + s.CancelReason)
		}
	}
	return w.String()
}

// stepID names a step's id when it is not its number, for update_plan ("a: ").
func stepID(i int, s Step) string {
	if s.ID != "" && s.ID != strconv.Itoa(i+1) {
		return s.ID + ": "
	}
	return ""
}

func listOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, ", ")
}

func limit(n int) string {
	if n <= 0 {
		return "not limited"
	}
	return "at most " + strconv.Itoa(n)
}

// pinnedChecks is the verification in one line: checks in words as they are, commands as
// "run: <argv>", which plangate runs before the plan is done.
func pinnedChecks(list []Check) string {
	var parts []string
	for _, c := range list {
		if c.IsCommand() {
			parts = append(parts, "run: "+c.Label())
		} else {
			parts = append(parts, c.Text)
		}
	}
	if len(Commands(list)) > 0 {
		parts = append(parts, "(plangate runs the commands before the plan is done; all must pass)")
	}
	return listOr(parts, "none declared")
}
