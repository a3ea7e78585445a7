package adminapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// The two changes: a decision on a plan and a session's mode. Each is one message to the
// engine from the operator ("admin:<name>" of the admin token the request carried,
// core.Person.Admin), the same message a button or a typed /plan command produces, and
// the API answers with the engine's outcome. A request's "by" is a note only: it is shown
// beside the token's name and never makes one token count as two approvers.

// ModeJSON is a session's mode, in the fields of the "Plan Agent V2" mode API.
type ModeJSON struct {
	PlanMode        string     `json:"plan_mode"` // "on" | "off"
	AutoApprove     bool       `json:"auto_approve"`
	ConfirmStrategy string     `json:"confirm_strategy"` // "strict" | "auto"
	Phase           core.Phase `json:"phase"`
}

func modeOf(s core.Session) ModeJSON {
	m := ModeJSON{PlanMode: "on", AutoApprove: s.AutoApprove, ConfirmStrategy: "strict", Phase: s.Phase}
	if s.Phase == core.PhaseOff {
		m.PlanMode = "off"
	}
	if s.AutoApprove {
		m.ConfirmStrategy = "auto"
	}
	return m
}

// modeRequest is POST .../mode; absent fields are left as they are.
type modeRequest struct {
	PlanMode        *string `json:"plan_mode"`
	AutoApprove     *bool   `json:"auto_approve"`
	ConfirmStrategy *string `json:"confirm_strategy"`
	By              string  `json:"by"`
}

// decisionRequest is POST .../decisions.
type decisionRequest struct {
	Action     string `json:"action"`
	ApprovalID string `json:"approval_id"`
	Feedback   string `json:"feedback"`
	By         string `json:"by"`
}

// validBy is the note "by": short, no spaces or punctuation that could read as another
// actor.
var validBy = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// checkBy is the reason a request's "by" is refused, "" when it is empty or valid.
func checkBy(by string) string {
	if by != "" && !validBy.MatchString(by) {
		return `"by" must be 1-64 letters, digits, ".", "_", "@" or "-"`
	}
	return ""
}

func (a *API) getMode(w http.ResponseWriter, r *http.Request) {
	if s, ok := a.load(w, r); ok {
		httpserver.WriteJSON(w, http.StatusOK, modeOf(s))
	}
}

func (a *API) postMode(w http.ResponseWriter, r *http.Request) {
	s, ok := a.load(w, r)
	if !ok {
		return
	}
	var req modeRequest
	if !httpserver.DecodeJSON(w, r, &req) {
		return
	}
	cmds, why := modeCommands(s, req)
	if why = cmp.Or(why, checkBy(req.By)); why != "" {
		httpserver.WriteError(w, http.StatusBadRequest, why)
		return
	}
	// One command at a time, in order: plan mode first, so "on" with auto-approve starts
	// planning and then accepts what it proposes.
	for _, text := range cmds {
		if _, ok := a.change(w, r, s, req.By, core.Message{Text: text}); !ok {
			return
		}
	}
	s, err := a.d.Store.Session(r.Context(), s.ID)
	if err != nil {
		a.failed(w, "loading a session", err)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, modeOf(s))
}

// modeCommands are the /plan commands that take s to the requested mode; none for a
// field that already has the asked value. confirm_strategy "auto" and "off" accept
// proposals at once, as /plan auto on does; "strict" leaves the decision to a person.
func modeCommands(s core.Session, req modeRequest) ([]string, string) {
	var cmds []string
	if p := req.PlanMode; p != nil {
		switch cur := modeOf(s).PlanMode; {
		case *p != "on" && *p != "off":
			return nil, `"plan_mode" must be "on" or "off"`
		case *p != cur:
			cmds = append(cmds, "/plan "+*p)
		}
	}
	auto := req.AutoApprove
	if c := req.ConfirmStrategy; c != nil {
		var on bool
		switch *c {
		case "strict":
		case "auto", "off":
			on = true
		default:
			return nil, `"confirm_strategy" must be "strict", "auto" or "off"`
		}
		if auto != nil && *auto != on {
			return nil, fmt.Sprintf(`"auto_approve": %v contradicts "confirm_strategy": %q`, *auto, *c)
		}
		auto = &on
	}
	if auto != nil && *auto != s.AutoApprove {
		cmds = append(cmds, "/plan auto "+map[bool]string{true: "on", false: "off"}[*auto])
	}
	return cmds, ""
}

func (a *API) decide(w http.ResponseWriter, r *http.Request) {
	s, ok := a.load(w, r)
	if !ok {
		return
	}
	var req decisionRequest
	if !httpserver.DecodeJSON(w, r, &req) {
		return
	}
	act, why := req.action()
	if why = cmp.Or(why, checkBy(req.By)); why != "" {
		httpserver.WriteError(w, http.StatusBadRequest, why)
		return
	}
	// A counted approval that still waits for more approvers is a success too: the reply
	// says how many there are.
	if reply, ok := a.change(w, r, s, req.By, core.Message{Action: &act}); ok {
		a.writeSession(w, r.Context(), s.ID, reply)
	}
}

// action is the button click the request stands for.
func (req decisionRequest) action() (core.Action, string) {
	act := core.Action{ApprovalID: req.ApprovalID}
	switch req.Action {
	case "accept":
		act.Kind = core.ActionAccept
	case "revise":
		act.Kind, act.Value = core.ActionRevise, req.Feedback
		if req.Feedback == "" {
			return act, `"revise" needs "feedback": what should change`
		}
	case "auto":
		act.Kind = core.ActionAuto
	default:
		return act, `"action" must be "accept", "revise" or "auto"`
	}
	if req.ApprovalID == "" {
		return act, `"approval_id" is required (the session's pending approval id)`
	}
	return act, ""
}

// change sends m to the engine as the holder of the request's admin token (with by as a
// note), into session s, and waits for the engine's answer. It returns true when the change was made; otherwise it has answered:
// 409 with the engine's refusal, 500 when the engine failed, 504 when it did not answer
// in time (the change may still happen; the session shows it).
func (a *API) change(w http.ResponseWriter, r *http.Request, s core.Session, by string, m core.Message) (string, bool) {
	name := httpserver.AdminName(r.Context())
	if name == "" { // only a route outside HandleAdmin could get here
		httpserver.WriteError(w, http.StatusUnauthorized, "missing or wrong admin token")
		return "", false
	}
	m.ID = "admin-" + randomID()
	m.Address = s.Address
	m.Sender = core.Person{ID: "admin:" + name, Name: adminDisplay(name, by), Admin: true}
	m.Time = a.d.Now()
	answer, forget := a.d.Tap.await(m.ID)
	defer forget()
	done := a.d.Engine.Enqueue(context.WithoutCancel(r.Context()), m)
	timeout := time.NewTimer(a.d.Wait)
	defer timeout.Stop()
	select {
	case rep := <-answer:
		return a.answered(w, rep, done, timeout.C)
	case err := <-done:
		if err != nil {
			a.failed(w, "applying the change", err)
			return "", false
		}
		select {
		case rep := <-answer:
			// Answered before done was taken: the two were ready at once, and the
			// engine did not fail.
			return a.answered(w, rep, nil, nil)
		default:
		}
		a.d.Log.Error("admin api: the engine handled a change without answering", "session", s.ID)
		httpserver.WriteError(w, http.StatusInternalServerError, "the engine gave no answer; details are in the gateway log")
	case <-timeout.C:
		httpserver.WriteError(w, http.StatusGatewayTimeout, "the change is still being handled; read the session again shortly")
	case <-r.Context().Done():
	}
	return "", false
}

// adminDisplay is how replies and approvals name the operator: the token's identity, and
// the request's "by" beside it when it says something more ("ops1 via admin:ops").
func adminDisplay(name, by string) string {
	if by == "" || by == name {
		return "admin:" + name
	}
	return by + " via admin:" + name
}

// answered handles the engine's first answer to a change: a reply is the change made
// (its text returned), a notice a refusal (409) unless the engine failed, which it says
// on done (nil when done was read already and said nothing went wrong).
func (a *API) answered(w http.ResponseWriter, rep core.Reply, done <-chan error, timeout <-chan time.Time) (string, bool) {
	if rep.Kind == core.ReplyText {
		return rep.Text, true
	}
	if done != nil {
		select {
		case err := <-done:
			if err != nil {
				a.failed(w, "applying the change", err)
				return "", false
			}
		case <-timeout:
		}
	}
	httpserver.WriteError(w, http.StatusConflict, rep.Text)
	return "", false
}

func randomID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(errors.Join(errors.New("reading random bytes"), err)) // crypto/rand does not fail
	}
	return hex.EncodeToString(b)
}
