package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// waitingRow is one session of the dashboard.
type waitingRow struct {
	SessionID, Link, Channel, Chat string
	Title, State                   string // the plan's title (or the question), where it stands in words
	Plan                           *cardView
	Question                       *core.Question
	Since, NextNudge               time.Time
	Approvals                      string
}

type dashboardView struct {
	User, CSRF, Filter, Note string
	Refresh                  int // milliseconds between refreshes of the list
	Channels                 []string
	Rows                     []waitingRow
	Decider                  bool
}

// dashboard lists the sessions on every channel that wait for a decision or an answer and
// that the user may see (sees): their own conversations and those they may decide on.
func (c *Channel) dashboard(w http.ResponseWriter, r *http.Request, v viewer) {
	view := dashboardView{User: v.Name, CSRF: v.CSRF, Filter: r.URL.Query().Get("channel"), Decider: c.decider(v.Name),
		Refresh: int(c.refresh / time.Millisecond)}
	// A background refresh leaves the note of the last decision for the page it reloads.
	if ck, err := r.Cookie("plangate_note"); err == nil && r.Header.Get("X-Plangate-Refresh") == "" {
		view.Note, _ = url.QueryUnescape(ck.Value)
		http.SetCookie(w, &http.Cookie{Name: "plangate_note", Path: "/dashboard", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	rows, chans, err := c.waiting(r.Context(), v, view.Filter)
	if err != nil {
		c.log.Error("listing waiting sessions", "err", err)
		http.Error(w, "The sessions could not be read; details are in the gateway log.", http.StatusInternalServerError)
		return
	}
	view.Rows, view.Channels = rows, chans
	c.write(w, http.StatusOK, "dashboard", view)
}

func (c *Channel) waiting(ctx context.Context, v viewer, filter string) ([]waitingRow, []string, error) {
	sessions, err := c.d.Store.WaitingSessions(ctx)
	if err != nil {
		return nil, nil, err
	}
	var rows []waitingRow
	var chans []string
	for _, s := range sessions {
		waits := s.Phase == core.PhaseAwaitingApproval || s.Question != nil
		if !waits || !c.sees(v.Name, s) {
			continue
		}
		if !slices.Contains(chans, s.Address.Channel) {
			chans = append(chans, s.Address.Channel)
		}
		if filter != "" && s.Address.Channel != filter {
			continue
		}
		row, err := c.row(ctx, s, v)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, row)
	}
	slices.Sort(chans)
	slices.SortFunc(rows, func(a, b waitingRow) int { return a.Since.Compare(b.Since) })
	return rows, chans, nil
}

func (c *Channel) row(ctx context.Context, s core.Session, v viewer) (waitingRow, error) {
	chat := s.Address.Chat
	if s.Address.Thread != "" {
		chat += " / " + s.Address.Thread
	}
	row := waitingRow{SessionID: s.ID, Link: "/dashboard/sessions/" + url.PathEscape(s.ID), Channel: s.Address.Channel, Chat: chat}
	if s.Phase == core.PhaseAwaitingApproval && s.PlanID != "" {
		p, err := c.d.Store.Plan(ctx, s.PlanID)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return row, fmt.Errorf("reading plan %s: %w", s.PlanID, err)
		}
		if err == nil {
			card := c.dashCard(ctx, p, s, v)
			row.Plan, row.Since = &card, p.CreatedAt
			row.Title = fmt.Sprintf("%s v%d", p.Body.Title, p.Version)
			row.Approvals = c.progress(p, s.Address)
			if row.Approvals == "" {
				row.Approvals = "none yet"
			}
		}
	}
	if q := s.Question; q != nil {
		row.Question = q
		if row.Since.IsZero() {
			row.Since = q.AskedAt
		}
		if row.Title == "" {
			row.Title = "Question: " + machine.OneLine(q.Text)
		}
	}
	row.State = stateWords(s, nil)
	nudges, err := c.d.Store.Nudges(ctx, s.ID)
	if err != nil {
		return row, fmt.Errorf("reading nudges of %s: %w", s.ID, err)
	}
	for _, n := range nudges {
		if n.Status == core.NudgeActive && n.Action == core.NudgeRemind && !n.NextFireAt.IsZero() &&
			(row.NextNudge.IsZero() || n.NextFireAt.Before(row.NextNudge)) {
			row.NextNudge = n.NextFireAt
		}
	}
	return row, nil
}

// dashCard is a plan's card as the dashboard shows it: buttons only for approvers, and
// they post to the dashboard.
func (c *Channel) dashCard(ctx context.Context, p core.Plan, s core.Session, v viewer) cardView {
	card := c.cardView(ctx, p, v.Name)
	card.CSRF = v.CSRF
	card.Buttons = p.Status == core.PlanPending && s.ApprovalID == p.ApprovalID && c.mayDecide(v.Name, s, false)
	card.Approval, card.Action, card.Session = p.ApprovalID, "/dashboard/actions", s.ID
	return card
}

// dashboardAction decides on a session of any channel as the signed-in user, with the
// core.Message a button click on that platform makes, so the engine applies the same
// rules. A decision no longer possible (decided or superseded meanwhile) is answered here.
func (c *Channel) dashboardAction(w http.ResponseWriter, r *http.Request, v viewer) {
	back := "/dashboard"
	act, ok := c.formAction(w, r, back)
	if !ok {
		return
	}
	s, err := c.d.Store.Session(r.Context(), r.PostForm.Get("session"))
	if err != nil || !c.sees(v.Name, s) {
		// A session the user may not see is answered as one that does not exist.
		c.answer(w, r, back, http.StatusNotFound, "There is no such session.")
		return
	}
	if !c.mayDecide(v.Name, s, false) {
		http.Error(w, fmt.Sprintf("Only approvers can decide on plans here (web:%s is not one).", v.Name), http.StatusForbidden)
		return
	}
	if why := c.stale(r.Context(), s, act); why != "" {
		c.note(w, why)
		c.answer(w, r, back, http.StatusConflict, why)
		return
	}
	m := core.Message{ID: "web-" + randomID(8), Address: s.Address, Sender: person(v.Name, s.Address.Channel),
		Action: &act, Time: c.d.Now()}
	if err := c.deliver(r.Context(), m); err != nil {
		c.answer(w, r, back, http.StatusServiceUnavailable, "The gateway is not taking decisions right now; try again in a moment.")
		return
	}
	c.note(w, c.sentNote(r.Context(), s, act))
	c.answer(w, r, back, http.StatusNoContent, "")
}

// sentNote is the dashboard's note after act went to the engine: what was sent, for which
// plan or question, and where the outcome is told.
func (c *Channel) sentNote(ctx context.Context, s core.Session, act core.Action) string {
	what := "your answer to the question"
	if act.Kind != core.ActionAnswer {
		what = "plan " + s.ID
		if p, err := c.d.Store.PlanByApproval(ctx, act.ApprovalID); err == nil {
			what = fmt.Sprintf("plan v%d %q", p.Version, p.Body.Title)
		}
		what = actionWords[act.Kind] + " for " + what
	}
	return fmt.Sprintf("Sent: %s. The conversation on %s gets the outcome.", what, s.Address.Channel)
}

// stale returns why act can no longer apply to s, or "".
func (c *Channel) stale(ctx context.Context, s core.Session, act core.Action) string {
	if act.Kind == core.ActionAnswer {
		if s.Question == nil || s.Question.ID != act.ApprovalID {
			return "That question was already answered or replaced; nothing changed."
		}
		return ""
	}
	if s.ApprovalID == act.ApprovalID {
		return ""
	}
	p, err := c.d.Store.PlanByApproval(ctx, act.ApprovalID)
	if err != nil {
		return "That plan is no longer waiting for a decision; nothing changed."
	}
	if p.Status == core.PlanSuperseded {
		return fmt.Sprintf("Plan v%d %q was superseded by a newer version; nothing changed.", p.Version, p.Body.Title)
	}
	return fmt.Sprintf("Plan v%d %q was already decided (%s); nothing changed.", p.Version, p.Body.Title, statusWords[p.Status])
}

func (c *Channel) note(w http.ResponseWriter, text string) {
	c.setCookie(w, "plangate_note", url.QueryEscape(text), "/dashboard", 60)
}

// sessionView is one session's plan versions and audit timeline.
type sessionView struct {
	User, CSRF, ID, Channel, Chat string
	Title, State                  string // the newest plan's title, where the session stands in words
	Plans                         []cardView
	Timeline                      []timelineEntry
}

func (c *Channel) sessionPage(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	s, ok := found(w, r, "session", func(ctx context.Context) (core.Session, error) { return c.d.Store.Session(ctx, id) })
	if !ok {
		return
	}
	if !c.sees(v.Name, s) {
		http.NotFound(w, r) // as if it did not exist: a user learns nothing of others' sessions
		return
	}
	view := sessionView{User: v.Name, CSRF: v.CSRF, ID: s.ID, Channel: s.Address.Channel, Chat: s.Address.Chat,
		Title: "A conversation on " + s.Address.Channel, State: stateWords(s, nil)}
	plans, err := c.d.Store.Plans(r.Context(), s.ID)
	if err == nil {
		for i := len(plans) - 1; i >= 0; i-- {
			view.Plans = append(view.Plans, c.dashCard(r.Context(), plans[i], s, v))
		}
	}
	if n := len(plans); n > 0 {
		view.Title = plans[n-1].Body.Title
		if s.PlanID == plans[n-1].ID {
			view.State = stateWords(s, &plans[n-1])
		}
	}
	evs, err := c.d.Store.Events(r.Context(), s.ID)
	if err != nil {
		c.log.Warn("reading events", "session", s.ID, "err", err)
	}
	view.Timeline = timeline(evs)
	c.write(w, http.StatusOK, "session", view)
}

// found reads what a page shows: a 404 when it does not exist, a 500 naming what could
// not be read otherwise; ok is false when the answer has been written.
func found[T any](w http.ResponseWriter, r *http.Request, what string, read func(context.Context) (T, error)) (v T, ok bool) {
	v, err := read(r.Context())
	if errors.Is(err, core.ErrNotFound) {
		http.NotFound(w, r)
		return v, false
	}
	if err != nil {
		http.Error(w, "The "+what+" could not be read.", http.StatusInternalServerError)
		return v, false
	}
	return v, true
}
