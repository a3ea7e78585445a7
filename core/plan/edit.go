package plan

import (
	"errors"
	"strings"
)

// ReadEdited turns a plan file a person edited and sent back into the body of the next
// version (docs/design.md §13), with what changed from prev, or a refusal worded for the
// person: the file does not parse, the judge refuses it, or it changes nothing.
func ReadEdited(prev Body, file []byte) (Body, Diff, string) {
	b, err := ParseMarkdown(file)
	if err != nil { // a *ParseError, which names the line
		return Body{}, Diff{}, "I could not read the edited plan: " + err.Error() + ". Nothing changed."
	}
	// An edited file is a proposal, not progress: boxes ticked in it mark nothing done.
	for i := range b.Steps {
		b.Steps[i].Status, b.Steps[i].VerifiedCriteria = StepPending, nil
	}
	if err := errors.Join(Judge(b), JudgeSpec(b)); err != nil {
		return Body{}, Diff{}, "The edited plan is not valid:\n" + strings.TrimSpace(err.Error()) + "\nNothing changed."
	}
	d := Compare(prev, b)
	if d.Empty() {
		return Body{}, Diff{}, "The edited plan is the same as the current one. Nothing changed."
	}
	return b, d, ""
}
