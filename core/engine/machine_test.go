package engine_test

import (
	"fmt"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
)

// TestMachineTable pins the transition table of docs/design.md §3.
func TestMachineTable(t *testing.T) {
	m := machine.NewMachine()
	allowed := map[core.Phase]map[machine.Trigger]core.Phase{
		core.PhaseOff: {
			machine.TrigOn: core.PhasePlanning, machine.TrigEnter: core.PhasePlanning,
			machine.TrigAutoOn: core.PhaseOff, machine.TrigAutoOff: core.PhaseOff,
		},
		core.PhasePlanning: {
			machine.TrigPropose: core.PhaseAwaitingApproval, machine.TrigAutoPropose: core.PhaseExecuting,
			machine.TrigAsk: core.PhasePlanning, machine.TrigAnswer: core.PhasePlanning, machine.TrigUpdate: core.PhasePlanning,
			machine.TrigAutoOn: core.PhasePlanning, machine.TrigAutoOff: core.PhasePlanning, machine.TrigOff: core.PhaseOff,
		},
		core.PhaseAwaitingApproval: {
			machine.TrigPropose: core.PhaseAwaitingApproval, machine.TrigAutoPropose: core.PhaseExecuting,
			machine.TrigAccept: core.PhaseExecuting, machine.TrigApprove: core.PhaseAwaitingApproval, machine.TrigRevise: core.PhasePlanning,
			machine.TrigAutoOn: core.PhaseExecuting, machine.TrigAutoOff: core.PhaseAwaitingApproval,
			machine.TrigOff: core.PhaseOff, machine.TrigExpire: core.PhasePlanning, machine.TrigEdit: core.PhaseAwaitingApproval,
			machine.TrigComment: core.PhaseAwaitingApproval,
		},
		core.PhaseExecuting: {
			machine.TrigRevise: core.PhasePlanning, machine.TrigAsk: core.PhaseExecuting, machine.TrigAnswer: core.PhaseExecuting,
			machine.TrigAutoOn: core.PhaseExecuting, machine.TrigAutoOff: core.PhaseExecuting, machine.TrigUpdate: core.PhaseExecuting,
			machine.TrigComplete: core.PhaseOff, machine.TrigOff: core.PhaseOff,
		},
	}
	for _, p := range machine.Phases() {
		for _, tr := range machine.Triggers() {
			t.Run(fmt.Sprintf("%s/%s", p, tr), func(t *testing.T) {
				want, wantOK := allowed[p][tr]
				got, ok := m.Next(p, tr)
				if ok != wantOK || got != want {
					t.Fatalf("Next(%s, %s) = %q, %v; want %q, %v", p, tr, got, ok, want, wantOK)
				}
			})
		}
	}
}

// TestEveryPhaseEveryTrigger drives the real engine into each phase and applies each
// trigger the way a person or the model would. Allowed pairs land in the phase the table
// names; refused pairs change nothing.
func TestEveryPhaseEveryTrigger(t *testing.T) {
	m := machine.NewMachine()
	for _, from := range machine.Phases() {
		for _, tr := range machine.Triggers() {
			if tr == machine.TrigExpire {
				continue // the approval timeout is driven by the nudge scheduler, not a message
			}
			t.Run(fmt.Sprintf("%s/%s", from, tr), func(t *testing.T) {
				h := newHarness(t, func(c *engine.Config) {
					if tr == machine.TrigApprove && from == core.PhaseAwaitingApproval { // one of two approvals; elsewhere refused as accept
						c.Policies = []machine.Policy{{Required: 2, RequesterMayApprove: true}}
					}
				})
				const chat = "c"
				sid := sessionID(chat)
				switch from {
				case core.PhaseOff:
					h.say(chat, "local", "hello")
				case core.PhasePlanning:
					h.say(chat, "local", "/plan on")
				case core.PhaseAwaitingApproval:
					h.toPending(chat, "Pending plan")
				case core.PhaseExecuting:
					h.toExecuting(chat, "Running plan")
				}
				if tr == machine.TrigAutoPropose || tr == machine.TrigAutoOff {
					h.setAuto(chat, true)
				}
				if tr == machine.TrigAnswer && (from == core.PhasePlanning || from == core.PhaseExecuting) {
					h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Which?", "options": []string{"A", "B"}})))
					h.say(chat, "local", "ask me something")
				}
				before := h.session(chat)
				beforePlans := h.plans(chat)
				command := true
				var replies = func() []core.Reply {
					switch tr {
					case machine.TrigOn:
						return h.say(chat, "local", "/plan on")
					case machine.TrigAccept, machine.TrigApprove:
						return h.say(chat, "local", "/plan accept")
					case machine.TrigRevise:
						return h.say(chat, "local", "/plan revise tighten the scope")
					case machine.TrigComment:
						return h.say(chat, "local", "/plan revise 1: tighten this step")
					case machine.TrigAnswer:
						return h.say(chat, "local", "/plan answer 1")
					case machine.TrigAutoOn:
						return h.say(chat, "local", "/plan auto")
					case machine.TrigAutoOff:
						return h.say(chat, "local", "/plan auto off")
					case machine.TrigOff:
						return h.say(chat, "local", "/plan off")
					case machine.TrigEdit:
						return h.sayFiles(chat, "local", "/plan edit", editedCopy(t, h, chat, "- [ ] An added step"))
					}
					command = false
					switch tr {
					case machine.TrigEnter:
						h.model.push(sid, calls(call("enter_plan_mode", map[string]any{"reason": "careful"})))
					case machine.TrigPropose, machine.TrigAutoPropose:
						h.model.push(sid, calls(propose("Another plan", "Only step")))
					case machine.TrigAsk:
						h.model.push(sid, calls(call("ask_user_question", map[string]any{"question": "Which?", "options": []string{"A", "B"}})))
					case machine.TrigUpdate:
						h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "in_progress"})))
					case machine.TrigComplete:
						h.model.push(sid, calls(update(stepArg{Step: "First step", Status: "completed"}, stepArg{Step: "Second step", Status: "cancelled"})))
					}
					return h.say(chat, "local", "please do it")
				}()
				after := h.session(chat)
				want, ok := m.Next(from, tr)
				if tr == machine.TrigAnswer && from != core.PhasePlanning && from != core.PhaseExecuting {
					ok = false // no question can be pending here
				}
				if !ok {
					want = from
				}
				if after.Phase != want {
					t.Fatalf("phase %s -> %s, want %s; replies:\n%s", from, after.Phase, want, joinTexts(replies))
				}
				if len(replies) == 0 {
					t.Fatal("no reply at all")
				}
				if ok {
					return
				}
				// Refused: nothing about the decision state changed.
				if after.PlanID != before.PlanID || after.ApprovalID != before.ApprovalID ||
					after.AutoApprove != before.AutoApprove || after.RejectionCount != before.RejectionCount {
					t.Fatalf("refused %s/%s changed the session:\nbefore %+v\nafter  %+v", from, tr, before, after)
				}
				afterPlans := h.plans(chat)
				if len(afterPlans) != len(beforePlans) {
					t.Fatalf("refused %s/%s created a plan", from, tr)
				}
				for i := range afterPlans {
					if afterPlans[i].Status != beforePlans[i].Status {
						t.Fatalf("refused %s/%s changed plan v%d from %s to %s", from, tr, afterPlans[i].Version, beforePlans[i].Status, afterPlans[i].Status)
					}
				}
				if command {
					if after.Version != before.Version {
						t.Errorf("a refused command wrote the session row (version %d -> %d)", before.Version, after.Version)
					}
					if replies[len(replies)-1].Kind != core.ReplyNotice {
						t.Errorf("refusal is not a notice: %q", lastText(replies))
					}
					return
				}
				// A refused tool call reaches the model as a tool error (entering plan mode
				// again is merely a no-op).
				reqs := h.model.requests()
				last := history(reqs[len(reqs)-1])
				res := last[len(last)-1]
				if res.Role != core.RoleTool {
					t.Fatalf("last message to the model is %s, want a tool result", res.Role)
				}
				noOp := tr == machine.TrigEnter || (from == core.PhasePlanning && tr == machine.TrigComplete) // drafts while planning
				if !noOp && !startsWith(res.Content, "error:") {
					t.Errorf("refused %s: tool result %q is not an error", tr, res.Content)
				}
			})
		}
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// The machine's tables are shared by every NewMachine: what Guards returns is a copy, so
// a caller that changes it changes no other Apply's guards.
func TestMachineGuardsAreACopy(t *testing.T) {
	gs := machine.NewMachine().Guards(machine.TrigAccept)
	if len(gs) == 0 {
		t.Fatal("accept has no guards")
	}
	first := gs[0]
	gs[0] = "changed"
	if got := machine.NewMachine().Guards(machine.TrigAccept)[0]; got != first {
		t.Errorf("a changed Guards result reached the next machine: %q, want %q", got, first)
	}
}
