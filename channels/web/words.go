package web

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// What the pages call things: conversations by what was asked or planned, states and
// statuses in words, never the stored identifiers.

// titleRunes is the longest conversation title, in characters, before it is cut with "…".
const titleRunes = 60

// requestTitle is the title a conversation gets from the first thing its user asked:
// the goal of "/plan on <goal>", or a message that is not a command. ok is false for
// anything else (another /plan command, an empty goal).
func requestTitle(text string) (string, bool) {
	text = strings.Join(strings.Fields(text), " ")
	if rest, isCmd := strings.CutPrefix(text, "/"); isCmd {
		goal, isOn := strings.CutPrefix(rest, "plan on ")
		if !isOn {
			return "", false
		}
		text = strings.TrimSpace(goal)
	}
	if text == "" {
		return "", false
	}
	return upperFirstRune(channels.Clip(text, titleRunes)), true
}

func upperFirstRune(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}

// untitled is the title of a conversation nothing was asked in yet.
const untitled = "New conversation"

// statusWords are the plan statuses in words: the badge is readable without its colour.
// An accepted plan's words say how far it got (planWords).
var statusWords = map[core.PlanStatus]string{
	core.PlanPending: "waiting for approval", core.PlanSuperseded: "superseded", core.PlanAccepted: "accepted",
	core.PlanRevised: "sent back for revision", core.PlanAbandoned: "abandoned", core.PlanAborted: "stopped",
	core.PlanExpired: "expired", core.PlanCompleted: "completed",
}

// planWords is plan p's status in words: "waiting for approval", "running step 2 of 4",
// "stopped: verification failed", "completed".
func planWords(p core.Plan) string {
	if p.Status == core.PlanAccepted {
		if st := p.Run.Stop; st != nil {
			return "stopped: " + plan.StopWords(st.Kind)
		}
		if n := len(p.Body.Steps); n > 0 {
			at := 0
			for i, s := range p.Body.Steps {
				if s.Status != plan.StepCompleted && s.Status != plan.StepCancelled {
					at = i + 1
					break
				}
			}
			if at == 0 {
				return "checking the result"
			}
			return fmt.Sprintf("running step %d of %d", at, n)
		}
		return "running"
	}
	if w, ok := statusWords[p.Status]; ok {
		return w
	}
	return strings.ReplaceAll(string(p.Status), "_", " ")
}

// stateWords is where session s stands, in words, with its current plan p (nil: none):
// what the side list, the dashboard and the session page say instead of the phase.
func stateWords(s core.Session, p *core.Plan) string {
	switch {
	case s.Question != nil:
		return "waiting for an answer"
	case s.Phase == core.PhasePlanning:
		return "planning"
	case s.Phase == core.PhaseAwaitingApproval:
		return "waiting for approval"
	case p != nil:
		return planWords(*p)
	case s.Phase == core.PhaseExecuting:
		return "running"
	}
	return "chatting"
}

// personWords is who a decision or audit row made on channel ch names: a web user by
// name (on the web, or as web:<name> deciding elsewhere), anyone else as ch:<their id>.
func personWords(id, ch string) string {
	if name, ok := strings.CutPrefix(id, Name+":"); ok {
		return name
	}
	if ch == Name || ch == "" {
		return id
	}
	return ch + ":" + id
}

// actorWords is an audit row's actor, on channel ch, as the subject of a sentence.
func actorWords(a core.Actor, ch string) string {
	switch a.Kind {
	case core.ActorPerson:
		return personWords(a.ID, ch)
	case core.ActorAgent:
		return "The agent"
	case core.ActorRule:
		if a.ID == "auto" {
			return "Auto-approve"
		}
		return "The rule " + a.ID
	case core.ActorAdmin:
		return "The operator " + a.ID
	}
	return "plangate"
}

// decisionWords is a decision's outcome as a past participle: "accepted", "sent back for
// revision".
func decisionWords(outcome string) string {
	switch outcome {
	case "revised":
		return "sent back for revision"
	case "auto_accepted":
		return "accepted automatically"
	case "aborted":
		return "stopped"
	}
	return strings.ReplaceAll(outcome, "_", " ")
}
