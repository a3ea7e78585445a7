package discord

import (
	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// approvalRecord remembers the messages that carry one plan version's buttons (the plan
// and any nudges), so the engine's ReplyDecided, which names only the approval id, can
// show the decision on them and remove the buttons; and so a late Revise click can say
// what was decided instead of opening a modal for nothing.
type approvalRecord = channels.Approval[sentMsg]

// sentMsg is one message with decision buttons, and its content as sent, to which the
// decision line is added.
type sentMsg struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
	Content string `json:"content"`
	// Buttons are the message's buttons, so a counted approval can show its progress and
	// keep them (NoteApprovals); records from before they were kept have none.
	Buttons []core.Button `json:"buttons,omitempty"`
	// Steps are the pending version's step texts, which the Revise modal offers to comment
	// on; records from before they were kept have none (the modal then asks for feedback only).
	Steps []string `json:"steps,omitempty"`
}
