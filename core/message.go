// Package core is plangate's vocabulary: normalized messages, sessions, plans, events and
// changes, and the ports in ports.go through which the engine talks to the outside world;
// channels, the store and model providers satisfy them and are wired together in cmd/plangate.
package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Address identifies one conversation on one platform; it keys a session.
type Address struct {
	Channel string // the adapter's name
	Account string // the bot, team or server the conversation is in; LocalAccount for a console
	Chat    string // the chat or channel id; a console's session name
	Thread  string // forum topic, thread or reply chain; "" if none
}

// LocalAccount is the Account of a console's sessions: one local user base, each session
// named by its Chat.
const LocalAccount = "local"

// SessionID is the stable, human-readable session key derived from the address,
// e.g. "terminal:local:main" or "slack:T1:C2:1700000000.0001".
func (a Address) SessionID() string {
	parts := []string{a.Channel, a.Account, a.Chat}
	if a.Thread != "" {
		parts = append(parts, a.Thread)
	}
	return strings.Join(parts, ":")
}

// Dir is the directory name of this session's plan files and workspace: the Chat on
// LocalAccount, otherwise channel, account, chat and thread. It is always one path element,
// and distinct sessions get distinct names: when unsafe characters had to be replaced, a
// short hash of the session id is appended.
func (a Address) Dir() string {
	var raw string
	if a.Account == LocalAccount {
		raw = a.Chat
	} else {
		raw = a.Channel + "-" + a.Account + "-" + a.Chat
		if a.Thread != "" {
			raw += "-" + a.Thread
		}
	}
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s != raw || s == "" {
		sum := sha256.Sum256([]byte(a.SessionID()))
		if s == "" {
			s = "session"
		}
		s += "-" + hex.EncodeToString(sum[:4])
	}
	return s
}

// Person is the sender (a person or a bot) of an inbound message, as the platform verified it.
type Person struct {
	ID    string // platform user id; approvers are matched on this, never on Name
	Name  string // display name, for replies only
	IsBot bool
	// Roles are the sender's platform roles as access entries (e.g. "discord-role:123"),
	// from the verified payload; an access.approvers entry may name one.
	Roles []string
	// Admin marks the operator of the admin API (ID "admin:<name>", the admin token's name),
	// who may make every decision an approver may. Only the admin API, behind its bearer
	// token, sets it.
	Admin bool
	// Operator marks the person at the console plangate runs in (the terminal's own
	// sender, not a "!name" line): access.allowed_users and access.rate_limit do not
	// apply to them. Only the terminal sets it.
	Operator bool
}

// ActionKind is what a button click asks for.
type ActionKind string

// The button actions. The zero value means "no action".
const (
	ActionAccept ActionKind = "accept"
	ActionRevise ActionKind = "revise"
	ActionAuto   ActionKind = "auto"
	ActionAnswer ActionKind = "answer"
	// ActionUndo is the Undo button of a plan's report (/plan undo of that version).
	ActionUndo ActionKind = "undo"
)

// Action is a button click: what it asks for, which approval it belongs to, and an
// optional value (revise feedback or the chosen answer).
type Action struct {
	Kind       ActionKind
	ApprovalID string
	Value      string
	// Step, on ActionRevise, is the 1-based step the feedback is a comment on (a step's
	// comment box, the Revise modal's step selector); 0 for feedback on the whole plan.
	Step int
}

// File is an attachment, inbound or outbound.
type File struct {
	Name string
	MIME string
	Data []byte
	Path string // where the file lives on disk, when it does (plan files)
	// Size is the size the platform declared for an inbound file that was not downloaded
	// because it is over the limit (Data is then empty); 0 otherwise.
	Size int64
}

// Message is one normalized inbound event.
type Message struct {
	ID          string // platform event id, for de-duplication; "" = no de-duplication
	Address     Address
	Sender      Person
	Text        string
	Direct      bool // a direct (one-to-one) conversation with the bot
	Mentioned   bool
	ReplyTo     string
	Attachments []File
	Action      *Action
	Time        time.Time
	// Replays: the adapter replays the event after a crash until its handling returned (an
	// inbox), so the engine may hold a plain message back for the turn's first commit.
	Replays bool
}

// ReplyKind tells an adapter what a reply is, so it can pick a native presentation.
type ReplyKind string

// Reply kinds. The zero value is an ordinary answer.
const (
	ReplyText     ReplyKind = ""
	ReplyPlan     ReplyKind = "plan"     // a proposed plan with its file and decision buttons
	ReplyQuestion ReplyKind = "question" // ask_user_question with option buttons
	ReplyProgress ReplyKind = "progress" // the step checklist, edited in place where possible
	ReplyNotice   ReplyKind = "notice"   // a system message (refusals, errors)
	ReplyNudge    ReplyKind = "nudge"    // a reminder that a decision or answer is pending
	// ReplyDecided says a plan version was decided (Ref is its approval id): adapters update
	// the message that carried its buttons, show who decided and remove the buttons.
	ReplyDecided ReplyKind = "decided"
	// ReplyApprovals shows the approvals a pending version has so far (Ref is its approval
	// id): adapters show it on the message with the version's buttons and keep them. A
	// channel that cannot edit such messages ignores both kinds.
	ReplyApprovals ReplyKind = "approvals"
	// ReplyReport carries the report of a plan version that completed or stopped, its file
	// attached (Ref is the version's approval id): an adapter with plan cards shows it on
	// the version's card, any other posts it as an ordinary reply.
	ReplyReport ReplyKind = "report"
)

// Button is one choice offered with a reply; clicking it produces a Message with Action set.
type Button struct {
	Label  string
	Action Action
}

// Reply is one outbound message. Text is markdown; adapters convert it.
type Reply struct {
	To          Address
	Kind        ReplyKind
	Text        string
	Attachments []File
	Buttons     []Button
	ReplaceID   string // edit this earlier message in place where the platform supports it
	Ref         string // ReplyDecided: the approval id of the decided plan version
	// Steps, on a ReplyPlan with decision buttons, are the pending version's step texts in
	// order: a Revise form offers them to comment on (Action.Step).
	Steps []string
	// InReplyTo is the Message.ID of the inbound event whose handling produced this reply
	// ("" for system messages): adapters answer an interaction with its own outcome.
	InReplyTo string
}
