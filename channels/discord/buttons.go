package discord

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

// feedbackField is the custom_id of the Revise modal's text input.
const feedbackField = "feedback"

// customID encodes a button: "plan:a:<approval>" (accept), "plan:r:<approval>" (revise),
// "plan:u:<approval>" (auto), "plan:q:<question>:<n>" (answer option n, 1-based). ok is
// false for an action plangate does not make or an id that would not fit.
func customID(a core.Action, option int) (string, bool) {
	var s string
	switch a.Kind {
	case core.ActionAccept:
		s = idPrefix + "a:" + a.ApprovalID
	case core.ActionRevise:
		s = idPrefix + "r:" + a.ApprovalID
	case core.ActionAuto:
		s = idPrefix + "u:" + a.ApprovalID
	case core.ActionAnswer:
		s = idPrefix + "q:" + a.ApprovalID + ":" + strconv.Itoa(option)
	default:
		return "", false
	}
	if !validID(a.ApprovalID) {
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
	var b button
	switch tag {
	case "a":
		b.kind = core.ActionAccept
	case "r":
		b.kind = core.ActionRevise
	case "u":
		b.kind = core.ActionAuto
	case "m":
		b.kind, b.modal = core.ActionRevise, true
	case "q":
		id, num, ok := strings.Cut(arg, ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 1 || n > 25 || strconv.Itoa(n) != num || !validID(id) {
			return button{}, false
		}
		return button{kind: core.ActionAnswer, approval: id, option: n}, true
	default:
		return button{}, false
	}
	if !validID(arg) {
		return button{}, false
	}
	b.approval = arg
	return b, true
}

// validID accepts what the engine makes and nothing that could smuggle a separator into
// a custom_id or a state key.
func validID(s string) bool { return channels.ValidID(s) }

// components lays out buttons: the decisions on one row (Accept green, Revise grey, Auto
// blurple), answer options five to a row. A button that cannot be encoded is left out and
// logged by the caller's count; the text always names the /plan command that does the same.
func components(bs []core.Button) (rows []discordgo.MessageComponent, dropped int) {
	var decisions, answers []discordgo.MessageComponent
	for option, b := range channels.Numbered(bs) {
		id, ok := customID(b.Action, option)
		if !ok {
			dropped++
			continue
		}
		btn := discordgo.Button{Label: clip(channels.ButtonLabel(b), maxLabel), CustomID: id, Style: style(b.Action.Kind)}
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
	return slices.DeleteFunc(channels.ApprovalIDs(r), func(id string) bool { return !validID(id) })
}

// clip shortens s to at most n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return strings.TrimSpace(s[:i]) + "…"
}
