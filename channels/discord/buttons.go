package discord

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Discord's limits on components.
const (
	maxCustomID   = 100
	maxLabel      = 80
	maxButtonsRow = 5
	maxRows       = 5
)

// idPrefix marks the components plangate makes, so a custom_id of another app's message
// (or a forged one) is told apart from a stale one of ours.
const idPrefix = "plan:"

// feedbackField and stepField are the custom_ids of the Revise modal's text inputs.
const (
	feedbackField = "feedback"
	stepField     = "step"
)

// customID encodes a button: "plan:a:<approval>" (accept), "plan:r:<approval>" (revise),
// "plan:u:<approval>" (auto), "plan:n:<approval>" (undo),"plan:q:<question>:<n>" (answer option n, 1-based); ok is
// false for an action plangate does not make or an id that does not fit.
func customID(a core.Action, option int) (string, bool) {
	var s string
	switch tag := channels.DecisionTag(a.Kind); {
	case !channels.ValidID(a.ApprovalID):
		return "", false
	case a.Kind == core.ActionAnswer:
		s = idPrefix + "q:" + a.ApprovalID + ":" + strconv.Itoa(option)
	case tag != "":
		s = idPrefix + tag + ":" + a.ApprovalID
	default:
		return "", false
	}
	return s, len(s) <= maxCustomID
}

// modalID is the custom_id of the Revise modal of an approval.
func modalID(approval string) string { return idPrefix + "m:" + approval }

// button is a decoded custom_id.
type button struct {
	kind     core.ActionKind
	approval string // approval id, or question id for answers
	option   int    // answers: 1-based option number
	modal    bool   // the Revise modal's submit
}

// parseCustomID decodes a custom_id; anything plangate did not make is refused.
func parseCustomID(s string) (button, bool) {
	if len(s) > maxCustomID {
		return button{}, false
	}
	rest, ok := strings.CutPrefix(s, idPrefix)
	if !ok {
		return button{}, false
	}
	tag, arg, ok := strings.Cut(rest, ":")
	if !ok {
		return button{}, false
	}
	if tag == "q" {
		id, num, ok := strings.Cut(arg, ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 1 || n > 25 || strconv.Itoa(n) != num || !channels.ValidID(id) {
			return button{}, false
		}
		return button{kind: core.ActionAnswer, approval: id, option: n}, true
	}
	b := button{approval: arg, modal: tag == "m"}
	if b.modal {
		b.kind, ok = core.ActionRevise, true
	} else {
		b.kind, ok = channels.DecisionKind(tag)
	}
	if !ok || !channels.ValidID(arg) {
		return button{}, false
	}
	return b, true
}

// components lays out buttons: the decisions on one row (Accept green, Revise grey, Auto
// blurple), answer options five to a row. dropped counts the buttons left out; the text
// always names the /plan command that does the same.
func components(bs []core.Button) (rows []discordgo.MessageComponent, dropped int) {
	var decisions, answers []discordgo.MessageComponent
	for option, b := range channels.Numbered(bs) {
		id, ok := customID(b.Action, option)
		if !ok {
			dropped++
			continue
		}
		btn := discordgo.Button{Label: channels.Clip(channels.ButtonLabel(b), maxLabel), CustomID: id, Style: style(b.Action.Kind)}
		if b.Action.Kind == core.ActionAnswer {
			answers = append(answers, btn)
		} else {
			decisions = append(decisions, btn)
		}
	}
	for _, group := range [][]discordgo.MessageComponent{decisions, answers} {
		for len(group) > 0 {
			n := min(len(group), maxButtonsRow)
			if len(rows) == maxRows {
				dropped += len(group)
				break
			}
			rows = append(rows, discordgo.ActionsRow{Components: group[:n]})
			group = group[n:]
		}
	}
	return rows, dropped
}

func style(k core.ActionKind) discordgo.ButtonStyle {
	switch k {
	case core.ActionAccept:
		return discordgo.SuccessButton
	case core.ActionAuto:
		return discordgo.PrimaryButton
	}
	return discordgo.SecondaryButton
}

// approvals lists the approval ids whose decision buttons r carries.
func approvals(r core.Reply) []string {
	return slices.DeleteFunc(channels.ApprovalIDs(r), func(id string) bool { return !channels.ValidID(id) })
}
