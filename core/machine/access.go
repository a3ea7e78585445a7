package machine

import (
	"slices"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// Authorized applies the access rules of docs/design.md §4.
func Authorized(approvers []string, who commands.Who, s core.Session, m core.Message) bool {
	switch who {
	case commands.Anyone:
		return true
	case commands.Approver, commands.ApproverOrOwner:
		if m.Sender.Admin {
			return true // the operator holds the admin token: authority over every session
		}
		if len(approvers) > 0 {
			key := m.Address.Channel + ":" + m.Sender.ID
			for _, a := range approvers {
				if a == key || slices.Contains(m.Sender.Roles, a) {
					return true
				}
			}
			return who == commands.ApproverOrOwner && m.Sender.ID == s.Owner
		}
		return m.Sender.ID == s.Owner || m.Direct
	}
	return false
}

// MayDecide reports whether the sender of m may decide on plans in session s, as the
// engine decides an accept: adapters show a session's buttons only to them.
func MayDecide(policies []Policy, approvers []string, s core.Session, m core.Message) bool {
	return Authorized(PolicyFor(policies, s.Address).ApproverList(approvers), commands.Approver, s, m)
}
