package web

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// RegisterHTTP adds the web channel's routes to srv: the chat (/, /c/{id}), its live stream,
// the dashboard (/dashboard), sign-in and the embedded assets. Every route is behind
// net/http's CrossOriginProtection, which refuses a state-changing request another site's
// page sent (Sec-Fetch-Site, else Origin against Host) before the CSRF token is looked at.
func (c *Channel) RegisterHTTP(srv *httpserver.Server) {
	cop := http.NewCrossOriginProtection()
	for pattern, h := range c.routes() {
		srv.Handle(pattern, cop.Handler(h))
	}
}

func (c *Channel) routes() map[string]http.Handler {
	static, _ := fs.Sub(assets, "assets") // the directory is embedded; Sub cannot fail
	return map[string]http.Handler{
		"GET /login":                    http.HandlerFunc(c.loginForm),
		"POST /login":                   http.HandlerFunc(c.login),
		"POST /logout":                  c.post(c.logout),
		"GET /{$}":                      c.page(c.home),
		"POST /conversations":           c.post(c.newConversation),
		"GET /c/{id}":                   c.page(c.chat),
		"GET /c/{id}/events":            c.page(c.stream),
		"POST /c/{id}/messages":         c.post(c.message),
		"POST /c/{id}/actions":          c.post(c.action),
		"POST /c/{id}/edit":             c.page(c.editUpload),
		"GET /plans/{file}":             c.page(c.planFile),
		"GET /dashboard":                c.page(c.dashboard),
		"POST /dashboard/actions":       c.post(c.dashboardAction),
		"GET /dashboard/sessions/{id}":  c.page(c.sessionPage),
		"GET /static/{file}":            http.StripPrefix("/static/", staticFiles(static)),
		"GET /dashboard/sessions/{$}":   http.RedirectHandler("/dashboard", http.StatusSeeOther),
		"GET /c/{$}":                    http.RedirectHandler("/", http.StatusSeeOther),
		"GET /dashboard/sessions/{id}/": http.RedirectHandler("/dashboard", http.StatusSeeOther),
	}
}

func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".js") && !strings.HasSuffix(r.URL.Path, ".css") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

var convID = regexp.MustCompile(`^[a-z0-9]{1,32}$`)

// address is the conversation id of user name as a core.Address.
func address(name, id string) core.Address {
	return core.Address{Channel: Name, Account: name, Chat: id}
}

// convRef is one conversation in the side list: its title (the plan's, else the first
// request's) and where it stands, in words.
type convRef struct {
	ID, Title, State string
	Current          bool
	At               time.Time
}

// conversations lists the user's conversations, newest first: those in the store, then
// those made with New conversation that have nothing stored yet (newest first among them).
func (c *Channel) conversations(r *http.Request, v viewer, current string) []convRef {
	ctx := r.Context()
	var out []convRef
	seen := map[string]bool{}
	sessions, err := c.d.Store.Sessions(ctx)
	if err != nil {
		c.log.Warn("listing sessions", "err", err)
	}
	titles, err := c.titles(ctx, v.Name)
	if err != nil {
		c.log.Warn("listing conversation titles", "err", err)
	}
	for _, s := range sessions {
		if s.Address.Channel != Name || s.Address.Account != v.Name {
			continue
		}
		seen[s.Address.Chat] = true
		ref := convRef{ID: s.Address.Chat, Title: titles[s.Address.Chat], At: s.UpdatedAt}
		var cur *core.Plan
		if s.PlanID != "" {
			if p, err := c.d.Store.Plan(ctx, s.PlanID); err == nil {
				cur, ref.Title = &p, p.Body.Title
			}
		}
		if ref.Title == "" {
			ref.Title = "Conversation of " + s.CreatedAt.UTC().Format("2 Jan 15:04")
		}
		ref.State = stateWords(s, cur)
		out = append(out, ref)
	}
	made, err := c.made(ctx, v.Name)
	if err != nil {
		c.log.Warn("listing conversations", "err", err)
	}
	now := c.d.Now()
	for _, id := range slices.Backward(made) {
		if !seen[id] {
			seen[id] = true
			ref := convRef{ID: id, Title: titles[id], At: now}
			if ref.Title == "" {
				ref.Title = untitled
			}
			out = append(out, ref)
		}
	}
	slices.SortStableFunc(out, func(a, b convRef) int { return b.At.Compare(a.At) })
	for i := range out {
		out[i].Current = out[i].ID == current
	}
	return out
}

func (c *Channel) home(w http.ResponseWriter, r *http.Request, v viewer) {
	if list := c.conversations(r, v, ""); len(list) > 0 {
		http.Redirect(w, r, "/c/"+list[0].ID, http.StatusSeeOther)
		return
	}
	// No conversation yet: the message box is there all the same, and the first message
	// makes the conversation it is sent in.
	c.write(w, http.StatusOK, "chat", chatView{User: v.Name, CSRF: v.CSRF, Title: untitled, Send: "/conversations"})
}

// chatView is the chat page.
type chatView struct {
	User, CSRF, ID, Stream string
	Title, State           string // the conversation's, as the side list says them
	Send                   string // where the message box posts
	Conversations          []convRef
	Items                  []itemView
}

func (c *Channel) chat(w http.ResponseWriter, r *http.Request, v viewer) {
	id, cv, ok := c.existing(w, r, v)
	if !ok {
		return
	}
	items, last := cv.snapshot()
	view := chatView{User: v.Name, CSRF: v.CSRF, ID: id, Conversations: c.conversations(r, v, id),
		Stream: fmt.Sprintf("/c/%s/events?after=%s", id, c.eventID(last)), Send: "/c/" + id + "/messages", Title: untitled}
	for _, ref := range view.Conversations {
		if ref.Current {
			view.Title, view.State = ref.Title, ref.State
		}
	}
	for i := range items {
		it := &items[i]
		if it.kind == itemCard {
			if p, err := c.d.Store.Plan(r.Context(), it.planID); err == nil {
				it.html = c.renderCard(r.Context(), p, v.Name)
			}
		}
		it.html = withCSRF(it.html, v.CSRF)
		view.Items = append(view.Items, c.itemView(it))
	}
	c.write(w, http.StatusOK, "chat", view)
}

// message is the Send button: the text goes to the engine as the user's message.
func (c *Channel) message(w http.ResponseWriter, r *http.Request, v viewer) {
	text := strings.TrimSpace(r.PostForm.Get("text"))
	id, cv, ok := c.existing(w, r, v)
	if !ok {
		return
	}
	if text == "" {
		c.answer(w, r, "/c/"+id, http.StatusBadRequest, "Type a message first.")
		return
	}
	if why := c.tooLong(text); why != "" {
		c.answer(w, r, "/c/"+id, http.StatusRequestEntityTooLarge, why)
		return
	}
	c.say(w, r, v, id, cv, text)
}

// say shows text in conversation id as v's, names the conversation after it if it is the
// first request, and hands it to the engine.
func (c *Channel) say(w http.ResponseWriter, r *http.Request, v viewer, id string, cv *convo, text string) {
	c.noteTitle(r.Context(), v.Name, id, text)
	c.addText(cv, itemUser, text, v.Name)
	m := core.Message{ID: "web-" + randomID(8), Address: address(v.Name, id), Sender: person(v.Name, Name), Text: text, Direct: true, Time: c.d.Now()}
	c.handOn(w, r, "/c/"+id, m, "The gateway is not taking messages right now; try again in a moment.")
}

// action is a button of the chat: Accept, Revise (with its feedback), Auto, or an answer.
func (c *Channel) action(w http.ResponseWriter, r *http.Request, v viewer) {
	id, cv, ok := c.existing(w, r, v)
	if !ok {
		return
	}
	act, ok := c.formAction(w, r, "/c/"+id)
	if !ok {
		return
	}
	// The click is shown as what the person said, so the transcript reads like a chat.
	said := actionWords[act.Kind]
	if act.Step > 0 {
		said = "Comment on step " + strconv.Itoa(act.Step)
	}
	if act.Value != "" {
		said += ": " + act.Value
	}
	c.addText(cv, itemUser, said, v.Name)
	m := core.Message{ID: "web-" + randomID(8), Address: address(v.Name, id), Sender: person(v.Name, Name),
		Direct: true, Action: &act, Time: c.d.Now()}
	c.handOn(w, r, "/c/"+id, m, "The gateway is not taking decisions right now; try again in a moment.")
}

// addText appends text to cv: what user by said (kind itemUser), or a notice (by "").
// What a user said is shown before it is handed on, so the page never has an answer
// above its question.
func (c *Channel) addText(cv *convo, kind itemKind, text, by string) {
	dom := "n"
	if kind == itemUser {
		dom = "u"
	}
	it := &item{dom: dom + strconv.FormatUint(c.ids.Add(1), 10), kind: kind, html: escapeText(text), text: text, by: by, at: c.d.Now()}
	cv.add(it, c.shows(it))
}

// handOn delivers m from a post to page back and answers the post; when the gateway is
// not taking it, the conversation is told that what was just shown did not reach it.
func (c *Channel) handOn(w http.ResponseWriter, r *http.Request, back string, m core.Message, refusal string) {
	if err := c.deliver(r.Context(), m); err != nil {
		text := "That did not reach the gateway (it is not running); nothing changed. Try again in a moment."
		c.addText(c.convo(r.Context(), m.Address), itemNotice, text, "")
		c.answer(w, r, back, http.StatusServiceUnavailable, refusal)
		return
	}
	c.answer(w, r, back, http.StatusNoContent, "")
}

var actionWords = map[core.ActionKind]string{core.ActionAccept: "Accept", core.ActionRevise: "Revise", core.ActionAuto: "Auto", core.ActionAnswer: "Answer", core.ActionUndo: "Undo"}

// formAction reads the button a form posted, or answers the post from page back with why
// it cannot be taken and returns false.
func (c *Channel) formAction(w http.ResponseWriter, r *http.Request, back string) (core.Action, bool) {
	a := core.Action{Kind: core.ActionKind(r.PostForm.Get("kind")), ApprovalID: r.PostForm.Get("approval"),
		Value: strings.TrimSpace(r.PostForm.Get("value"))}
	switch a.Kind {
	case core.ActionAccept, core.ActionRevise, core.ActionAuto, core.ActionAnswer, core.ActionUndo:
		if a.ApprovalID == "" && a.Kind != core.ActionAnswer {
			break
		}
		if step := r.PostForm.Get("step"); step != "" {
			n, err := strconv.Atoi(step)
			if a.Kind != core.ActionRevise || err != nil || n < 1 {
				c.answer(w, r, back, http.StatusBadRequest, "That step number is not one plangate knows; nothing changed.")
				return a, false
			}
			a.Step = n
		}
		if why := c.tooLong(a.Value); why != "" {
			c.answer(w, r, back, http.StatusRequestEntityTooLarge, why)
			return a, false
		}
		return a, true
	}
	c.answer(w, r, back, http.StatusBadRequest, "That button is not one plangate knows.")
	return a, false
}

// answer ends a POST: the page's script gets the status and a one-line reason; a form
// posted without the script is sent back to the page.
func (c *Channel) answer(w http.ResponseWriter, r *http.Request, back string, code int, why string) {
	if r.Header.Get("X-Plangate-Fetch") != "" {
		if code == http.StatusNoContent {
			w.WriteHeader(code)
			return
		}
		http.Error(w, why, code)
		return
	}
	if code >= 400 {
		http.Error(w, why, code)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// planFile downloads a plan version as markdown, rendered from the store, to a user who
// may see its session (sees); to anyone else it does not exist.
func (c *Channel) planFile(w http.ResponseWriter, r *http.Request, v viewer) {
	id, ok := strings.CutSuffix(r.PathValue("file"), ".md")
	if !ok {
		http.NotFound(w, r)
		return
	}
	p, ok := found(w, r, "plan", func(ctx context.Context) (core.Plan, error) { return c.d.Store.Plan(ctx, id) })
	if !ok {
		return
	}
	s, ok := found(w, r, "plan's session", func(ctx context.Context) (core.Session, error) { return c.d.Store.Session(ctx, p.SessionID) })
	if !ok {
		return
	}
	if !c.sees(v.Name, s) {
		http.NotFound(w, r)
		return
	}
	name := plan.FileName(p.CreatedAt, p.Body.Title, p.Version)
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	_, _ = w.Write([]byte(machine.RenderPlanMarkdown(p, s.Phase, s.Address.Chat, c.d.Reach)))
}
