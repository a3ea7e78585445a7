package machine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Approval policies (docs/design.md §12): who may accept a plan in a session, how many
// distinct people must, and whether the person who asked for the work may be one of them.

// PolicyMatch selects sessions by their address, and with Risk the plan versions of one
// risk level; an empty field matches every value.
type PolicyMatch struct {
	Channel string
	Account string
	Chat    string
	// Risk makes the policy a risk rule: it applies to plan versions of this level only
	// (PlanRisk), on top of the session's policy, and can only make it stricter.
	Risk plan.RiskLevel
}

// Policy is the approval rule of one session.
type Policy struct {
	Match PolicyMatch
	// Approvers replaces the global approver list ("channel:user id") where the policy
	// applies; nil keeps the global list.
	Approvers []string
	// Required is the number of distinct approvers a plan version needs; below 1 means 1.
	Required int
	// RequesterMayApprove lets the person who asked for the plan accept it.
	RequesterMayApprove bool
	// Risk is the level of the plan a risk rule made this policy stricter for, for the
	// words of what the plan needs ("" when none did).
	Risk plan.RiskLevel
}

// DefaultPolicy applies where no policy matches: the global approvers, one approval, and
// the requester may give it.
var DefaultPolicy = Policy{Required: 1, RequesterMayApprove: true}

// PolicyFor returns the policy of a session at addr, deciding on a plan version of level
// risk ("" for what the session allows without a plan: /plan auto, who may decide). It is
// the first policy without Match.Risk that fits addr, or DefaultPolicy, made stricter by
// every risk rule that fits addr and risk: the highest required count wins, and one
// requester_may_approve: false forbids the requester. A risk rule never names approvers,
// so who may decide does not depend on the plan.
func PolicyFor(policies []Policy, addr core.Address, risk plan.RiskLevel) Policy {
	out := DefaultPolicy
	for _, p := range policies {
		if p.Match.Risk == "" && p.Match.fits(addr) {
			out = p
			break
		}
	}
	for _, p := range policies {
		if p.Match.Risk == "" || p.Match.Risk != risk || !p.Match.fits(addr) {
			continue
		}
		if p.needed() > out.needed() || (!p.RequesterMayApprove && out.RequesterMayApprove) {
			out.Risk = risk
		}
		out.Required = max(out.needed(), p.needed())
		out.RequesterMayApprove = out.RequesterMayApprove && p.RequesterMayApprove
	}
	return out
}

// fits reports whether m's address fields fit addr.
func (m PolicyMatch) fits(addr core.Address) bool {
	return (m.Channel == "" || m.Channel == addr.Channel) && (m.Account == "" || m.Account == addr.Account) &&
		(m.Chat == "" || m.Chat == addr.Chat)
}

// PlanRisk is the level risk rules match a version of body by: its stated risk, and high
// when it states none, so leaving the risk out never lowers what a plan needs.
func PlanRisk(body plan.Body) plan.RiskLevel {
	if body.Risk.Valid() {
		return body.Risk
	}
	return plan.RiskHigh
}

// ApproverList is the list of approvers in force under p: its own, or the global one.
func (p Policy) ApproverList(global []string) []string {
	if p.Approvers != nil {
		return p.Approvers
	}
	return global
}

// needs is the line a pending version's message adds under p ("" for one approval anyone
// allowed may give), naming the version's requesters, and the risk that made it stricter.
func (p Policy) needs(requesters []core.Requester) string {
	n := p.needed()
	who := "whoever asked for it"
	if len(requesters) > 0 {
		who += " (" + requesterNames(requesters) + ")"
	}
	var line string
	switch {
	case n > 1 && !p.RequesterMayApprove:
		line = fmt.Sprintf("needs %d approvals from different people, not from %s.", n, who)
	case n > 1:
		line = fmt.Sprintf("needs %d approvals from different people.", n)
	case !p.RequesterMayApprove:
		line = who + " cannot approve it: another approver decides."
	default:
		return ""
	}
	if p.Risk != "" {
		if strings.HasPrefix(line, "needs ") {
			line = "it " + line
		}
		return "\nIt is " + string(p.Risk) + " risk, so " + line
	}
	return "\n" + UpperFirst(line)
}

// strict reports whether p asks more than one person's word (several approvals, or not
// the requester's): then no auto-approve switch or rule may stand in for those people.
func (p Policy) strict() bool { return p.needed() > 1 || !p.RequesterMayApprove }

// noAuto is the refusal of /plan auto on under a strict policy: the session's own, or
// that of the pending version label when a risk rule made it strict.
func (p Policy) noAuto(label string) string {
	why := "another approver than whoever asked for a plan"
	if n := p.needed(); n > 1 {
		why = fmt.Sprintf("%d approvals from different people", n)
	}
	const decide = ". Decide with /plan accept · /plan revise <feedback>."
	if p.Risk != "" && label != "" {
		return fmt.Sprintf("Auto-approve cannot accept %s: it is %s risk, and the approval policy (access.policies) needs %s for it%s",
			label, p.Risk, why, decide)
	}
	return "Auto-approve is not available in this conversation: its approval policy (access.policies) needs " + why + decide
}

// needed is the number of approvals p requires.
func (p Policy) needed() int { return max(p.Required, 1) }

// ApprovalState is the approvals one plan version has collected so far.
type ApprovalState struct {
	Version   int
	Approvals []plan.Approval
}

// VerdictKind is the outcome of one acceptance under a policy.
type VerdictKind string

// Verdicts of RecordApproval.
const (
	VerdictAccepted         VerdictKind = "accepted"          // the N-th distinct approval: the plan is accepted
	VerdictCounted          VerdictKind = "counted"           // recorded; more are needed
	VerdictDuplicate        VerdictKind = "duplicate"         // this person already approved this version
	VerdictRequesterRefused VerdictKind = "requester_refused" // the requester may not approve
)

// ApprovalVerdict says what one acceptance did, with the text for the chat.
type ApprovalVerdict struct {
	Kind     VerdictKind
	Count    int // distinct approvals of this version after the call
	Required int
	Text     string
}

// RecordApproval records a's acceptance of plan version a.Version under policy p, where
// requesters asked for the plan; approvals of another version are void. Whether a may
// decide at all is checked before, as for any decision.
func RecordApproval(st ApprovalState, a plan.Approval, requesters []core.Requester, p Policy) (ApprovalState, ApprovalVerdict) {
	if st.Version != a.Version {
		st = ApprovalState{Version: a.Version}
	}
	need := p.needed()
	verdict := func(k VerdictKind, text string) ApprovalVerdict {
		return ApprovalVerdict{Kind: k, Count: len(st.Approvals), Required: need, Text: text}
	}
	if !p.RequesterMayApprove && isRequester(requesters, a.By) {
		return st, verdict(VerdictRequesterRefused, "you asked for this plan; another approver must accept it")
	}
	for _, prev := range st.Approvals {
		if prev.By == a.By {
			return st, verdict(VerdictDuplicate, fmt.Sprintf("you already approved plan v%d; %s", a.Version, ApprovalProgress(st, p)))
		}
	}
	st.Approvals = append(append([]plan.Approval(nil), st.Approvals...), a)
	if len(st.Approvals) >= need {
		return st, verdict(VerdictAccepted, ApprovalProgress(st, p))
	}
	return st, verdict(VerdictCounted, ApprovalProgress(st, p))
}

// ApprovalProgress is "1 of 2 approvals (alice)" for /plan status and the buttons'
// message; "" when the policy needs one approval and none is recorded.
func ApprovalProgress(st ApprovalState, p Policy) string {
	need := p.needed()
	if need == 1 && len(st.Approvals) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d of %d %s", len(st.Approvals), need, Plural(need, "approval", "approvals"))
	if len(st.Approvals) > 0 {
		s += " (" + approverNames(st.Approvals) + ")"
	}
	return s
}

// unreachable says why a pending version can no longer collect the approvals p needs, or
// returns "": under requester_may_approve: false its requesters and editor (excluded) may
// not accept it, and fewer people who may decide are left than approvals are missing.
// Only people listed by id count (a role may hold anyone); with no list, owner decides.
// The admin API is not counted: it is the way out this names.
func (p Policy) unreachable(global []string, owner string, excluded []string, approvals []plan.Approval) string {
	if p.RequesterMayApprove {
		return ""
	}
	list := p.ApproverList(global)
	if len(list) == 0 {
		list = []string{owner}
	}
	left := map[string]bool{}
	for _, a := range list {
		if isRole(a) {
			return ""
		}
		left[a] = !slices.Contains(excluded, a)
	}
	missing := p.needed()
	for _, a := range approvals {
		if _, ok := left[a.By]; ok {
			left[a.By] = false // counted already
		}
		missing--
	}
	n := 0
	for _, ok := range left {
		if ok {
			n++
		}
	}
	if n >= missing {
		return ""
	}
	who := "no one who may decide is"
	switch {
	case n == 1:
		who = "only one person who may decide is"
	case n > 1:
		who = fmt.Sprintf("only %d people who may decide are", n)
	}
	return fmt.Sprintf("It cannot get the approvals it needs: %d more, and %s left (whoever asked for it or edited it may not accept it). Add approvers to the policy (access.policies), or decide through the admin API.",
		missing, who)
}

// PolicyProblem says why a policy can never be satisfied (more required approvals than
// approvers; with none listed the session owner alone decides), or returns "".
func PolicyProblem(p Policy, global []string) string {
	if p.Required < 0 {
		return fmt.Sprintf("required is %d: it must be 1 or more", p.Required)
	}
	list := p.ApproverList(global)
	distinct := map[string]bool{}
	for _, a := range list {
		if isRole(a) {
			return "" // a role may hold any number of people
		}
		distinct[a] = true
	}
	need := p.needed()
	switch {
	case len(list) == 0 && need > 1:
		return fmt.Sprintf("required is %d but no approvers are listed, so only the session owner decides: list at least %d approvers or drop required", need, need)
	case len(list) > 0 && need > len(distinct):
		where := "approvers lists"
		if p.Approvers == nil {
			where = "access.approvers lists"
		}
		return fmt.Sprintf("required is %d but %s only %d %s: the policy can never be satisfied; list more approvers or lower required",
			need, where, len(distinct), Plural(len(distinct), "person", "people"))
	}
	return ""
}

// Asked returns list with by added once (the first name given is kept); "" adds no one.
func Asked(list []core.Requester, by, name string) []core.Requester {
	if by == "" || isRequester(list, by) {
		return list
	}
	return append(slices.Clip(list), core.Requester{By: by, Name: name})
}

// WithRequesters is list with every one of more added (once each).
func WithRequesters(list, more []core.Requester) []core.Requester {
	for _, r := range more {
		list = Asked(list, r.By, r.Name)
	}
	return list
}

// isRequester reports whether by is one of list.
func isRequester(list []core.Requester, by string) bool {
	return slices.ContainsFunc(list, func(r core.Requester) bool { return r.By == by })
}

// requesterNames is "alice, bob" for the chat: each requester's name, else their id.
func requesterNames(list []core.Requester) string {
	names := make([]string, len(list))
	for i, r := range list {
		names[i] = cmp.Or(r.Name, r.By)
	}
	return strings.Join(names, ", ")
}

// isRole reports whether access entry a names a platform role ("<kind>-role:<id>")
// rather than one person ("<channel>:<user id>").
func isRole(a string) bool {
	kind, _, ok := strings.Cut(a, ":")
	return ok && strings.HasSuffix(kind, "-role")
}

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
	return Authorized(PolicyFor(policies, s.Address, "").ApproverList(approvers), commands.Approver, s, m)
}
