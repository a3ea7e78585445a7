package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxComments bounds the comments one version collects, so a chat cannot grow a version's
// stored record without end.
const MaxComments = 50

// Comment is a person's comment on steps of a pending version (/plan revise 2: …), kept
// on that version until a revise sends it, with every other waiting comment, to the agent.
type Comment struct {
	ID string `json:"id"` // "c1", "c2", … in the order given on the version
	// Steps are 1-based positions in the version's steps; StepTexts their texts then, so
	// the agent and later readers know what was meant whatever the next version does.
	Steps     []int     `json:"steps"`
	StepTexts []string  `json:"step_texts"`
	Text      string    `json:"text"`
	By        string    `json:"by"` // "channel:user id"
	ByName    string    `json:"by_name,omitempty"`
	At        time.Time `json:"at"`
	// Sent: a revise of the version sent the comment to the agent.
	Sent bool `json:"sent,omitempty"`
	// AnsweredIn is the version whose proposal said it answered the comment; 0 for none.
	AnsweredIn int `json:"answered_in,omitempty"`
}

// Waiting are the comments not yet sent to the agent.
func Waiting(cs []Comment) []Comment {
	var out []Comment
	for _, c := range cs {
		if !c.Sent {
			out = append(out, c)
		}
	}
	return out
}

// NextCommentID is the id the next comment on a version with comments cs gets.
func NextCommentID(cs []Comment) string { return "c" + strconv.Itoa(len(cs)+1) }

// StepsLabel names steps for people: "step 2", "steps 2, 4".
func StepsLabel(steps []int) string {
	parts := make([]string, len(steps))
	for i, n := range steps {
		parts[i] = strconv.Itoa(n)
	}
	if len(steps) == 1 {
		return "step " + parts[0]
	}
	return "steps " + strings.Join(parts, ", ")
}

// CommentAnswer is one comment of the version before, as "Changes from vN" lists it: the
// comment and whether the new version's proposal said it answered it.
type CommentAnswer struct {
	ID       string
	Steps    []int
	Text     string
	Answered bool
}

// Words are the answer for the chat line: "comment c1 on step 2 answered".
func (c CommentAnswer) Words() string {
	return fmt.Sprintf("comment %s on %s %s", c.ID, StepsLabel(c.Steps), answeredWord(c.Answered))
}

// Answers lists the comments cs of the version before with whether answered (the ids the
// proposal's answered_comments named) holds each.
func Answers(cs []Comment, answered []string) []CommentAnswer {
	var out []CommentAnswer
	for _, c := range cs {
		out = append(out, CommentAnswer{ID: c.ID, Steps: c.Steps, Text: c.Text, Answered: slices.Contains(answered, c.ID)})
	}
	return out
}

// ParseAnswered reads exit_plan_mode's answered_comments, the ids of the comments the
// proposal says it answers, trimmed and without repeats; nil when the field is absent.
// ParseProposal has checked the arguments' shape already.
func ParseAnswered(args json.RawMessage) ([]string, error) {
	var a struct {
		Answered []string `json:"answered_comments"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("exit_plan_mode: answered_comments must be a list of comment ids like [\"c1\"]")
	}
	var out []string
	for _, id := range a.Answered {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// JudgeAnswered checks the ids a proposal says it answered against the comments that were
// sent to the agent (sent): an id that is not one of them is refused, so a model cannot
// claim to have answered what nobody said.
func JudgeAnswered(claimed []string, sent []Comment) error {
	var ids []string
	for _, c := range sent {
		ids = append(ids, c.ID)
	}
	var problems Problems
	for _, id := range claimed {
		if slices.Contains(ids, id) {
			continue
		}
		switch {
		case len(problems) >= maxProblems:
		case len(ids) == 0:
			problems = append(problems, fmt.Sprintf("answered_comments names %s, but no comments were sent to you; leave answered_comments out", strconv.Quote(clipLine(id, 40))))
		default:
			problems = append(problems, fmt.Sprintf("answered_comments names %s, which is not a comment sent to you; the comments are %s", strconv.Quote(clipLine(id, 40)), strings.Join(ids, ", ")))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}
