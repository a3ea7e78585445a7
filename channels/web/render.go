package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	"html"
	"html/template"
	"strings"
	"sync"
	"time"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

//go:embed assets
var assets embed.FS

// parsePages parses the page templates.
func parsePages() (*template.Template, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing templates: %w", err)
	}
	return t, nil
}

func (c *Channel) render(name string, data any) (template.HTML, error) {
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return template.HTML(b.String()), nil // #nosec: the output of html/template
}

// Markdown from the engine or the model goes through goldmark, with raw HTML shown as
// text rather than passed on, then through bluemonday's UGC policy: no scripts, no event
// attributes, no javascript: links, and links to other sites open with rel=noopener.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))),
	)
})

var policy = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
})

func renderMarkdown(md string) template.HTML {
	var b bytes.Buffer
	if err := markdown().Convert([]byte(strings.ToValidUTF8(md, "\uFFFD")), &b); err != nil {
		return escapeText(md)
	}
	return template.HTML(policy().SanitizeBytes(b.Bytes())) // #nosec: sanitized
}

func escapeText(s string) template.HTML {
	return template.HTML("<p>" + strings.ReplaceAll(html.EscapeString(s), "\n", "<br>") + "</p>") // #nosec: escaped
}

// rawAsText renders raw HTML in markdown as visible, escaped text; the default renderer
// handles every other node.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			writeEscaped(w, src, n.(*ast.RawHTML).Segments)
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		hb := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<p>")
		writeEscaped(w, src, hb.Lines())
		if hb.HasClosure() {
			_, _ = w.WriteString(html.EscapeString(string(hb.ClosureLine.Value(src))))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkSkipChildren, nil
	})
}

// writeEscaped writes the source text of segs, HTML-escaped.
func writeEscaped(w util.BufWriter, src []byte, segs *gmtext.Segments) {
	for i := range segs.Len() {
		seg := segs.At(i)
		_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
	}
}

// buttonView is one decision or answer button.
type buttonView struct {
	Label, Kind, Approval, Value string
}

// replyView is a non-plan reply with its buttons.
type replyView struct {
	Body        template.HTML
	Buttons     []buttonView
	Attachments []string
	Action      string // where the buttons post
	CSRF        string
}

// renderReply renders a reply that is not about a plan (text, notice, nudge, question).
func (c *Channel) renderReply(r core.Reply) template.HTML {
	v := replyView{Body: renderMarkdown(r.Text), Action: "/c/" + r.To.Chat + "/actions"} // CSRF: see withCSRF
	for _, b := range r.Buttons {
		v.Buttons = append(v.Buttons, buttonView{Label: b.Label, Kind: string(b.Action.Kind), Approval: b.Action.ApprovalID, Value: b.Action.Value})
	}
	for _, f := range r.Attachments {
		v.Attachments = append(v.Attachments, f.Name)
	}
	return c.fragment("reply", v, escapeText(r.Text))
}

// fragment renders template name, or logs why it could not and returns fallback.
func (c *Channel) fragment(name string, data any, fallback template.HTML) template.HTML {
	h, err := c.render(name, data)
	if err != nil {
		c.log.Error("rendering "+name, "err", err)
		return fallback
	}
	return h
}

// The CSRF token belongs to one sign-in, but what the engine sends is rendered once for
// every page of a conversation (the user may be signed in twice), so replies and cards
// are rendered with an empty token; a page drawn for a sign-in gets its token put in, and
// the script posts with the token of its page. Sanitized content cannot contain the
// attribute's quotes, only forms can.
const blankCSRF = `name="csrf" value=""`

// withCSRF puts the sign-in's CSRF token into the forms of h.
func withCSRF(h template.HTML, token string) template.HTML {
	return template.HTML(strings.ReplaceAll(string(h), blankCSRF, `name="csrf" value="`+token+`"`))
}

// itemView is what the "item" template needs.
type itemView struct {
	DOM, Kind, Label string
	HTML             template.HTML
}

var kindLabels = map[itemKind]string{itemUser: "", itemBot: "plangate", itemNotice: "Notice", itemNudge: "Reminder", itemCard: "Plan"}

func (c *Channel) itemHTML(it *item) template.HTML {
	return c.fragment("item", c.itemView(it), "")
}

func (c *Channel) itemView(it *item) itemView {
	label := kindLabels[it.kind]
	if it.kind == itemUser {
		label = it.by
	}
	return itemView{DOM: it.dom, Kind: string(it.kind), Label: label, HTML: it.html}
}

// stepLooks are a step's mark and words by its status.
var stepLooks = map[plan.StepStatus]struct{ mark, words string }{
	plan.StepPending: {"[ ]", "to do"}, plan.StepInProgress: {"[>]", "in progress"},
	plan.StepCompleted: {"[x]", "done"}, plan.StepCancelled: {"[~]", "cancelled"},
}

// stepView is one step of a card: its mark and words, and the comments waiting on it.
type stepView struct {
	Mark, Text, Status, Class string
	N                         int      // its 1-based number, which a comment names
	Comments                  []string // "c1 (alice): use the v2 API", waiting for a revise
}

// cardView is what the "card" template needs.
type cardView struct {
	PlanID, Title, Summary, Status, StatusClass string
	Version, Done, Total, PrevVersion           int
	Steps                                       []stepView
	Grants                                      []plan.Grant  // every grant of the plan, in words
	Checks                                      []string      // the commands plangate runs before calling the plan done
	Verified                                    string        // the latest run of those commands ("" = none yet)
	ReportLine                                  string        // the report's summary once the version completed or stopped
	Report                                      template.HTML // the report itself, sanitized markdown
	Changes                                     string
	Intent                                      string // the plan's risk level, expected outcome and non-goals in one line
	Download                                    string
	Decision                                    string
	Approvals                                   string // "1 of 2 approvals (alice)" while more are needed
	Buttons                                     bool
	Undo                                        bool // the report's Undo (/plan undo of this version) is there to press
	Approval, Action, CSRF, Session             string
	Edit                                        string // where an edited plan file is uploaded ("" = not here)
	EditedBy                                    string // the person who wrote this version by editing the file
}

// renderCard renders plan p's card as viewer (a web user name) sees it in a chat.
func (c *Channel) renderCard(ctx context.Context, p core.Plan, viewer string) template.HTML {
	return c.fragment("card", c.cardView(ctx, p, viewer), escapeText(p.Body.Title))
}

func (c *Channel) cardView(ctx context.Context, p core.Plan, viewer string) cardView {
	v := cardView{PlanID: p.ID, Title: p.Body.Title, Summary: p.Body.Summary, Version: p.Version,
		Status: planWords(p), StatusClass: string(p.Status), Download: "/plans/" + p.ID + ".md",
		EditedBy: p.EditedBy, Grants: machine.PlanGrants(p.Body.Scope, c.d.Reach, nil), Intent: machine.IntentLine(p.Body)} // CSRF: see withCSRF
	for _, c := range plan.Commands(p.Body.Verification) {
		line := "Runs before done: " + plan.DisplayArgv(c.Argv)
		if c.Name != "" {
			line = "Runs before done: " + c.Name + " (" + plan.DisplayArgv(c.Argv) + ")"
		}
		v.Checks = append(v.Checks, line)
	}
	if r := p.Run.Verification; r != nil {
		v.Verified = "Verification: " + plan.VerificationSummary(*r)
	}
	if r := p.Run.Report; r != nil {
		v.ReportLine = "Report: " + r.Summary()
		v.Report = renderMarkdown(string(r.Markdown(p.Version, p.Body.Title)))
	}
	for i, s := range p.Body.Steps {
		look := stepLooks[s.Status]
		v.Steps = append(v.Steps, stepView{Mark: look.mark, Text: s.Text, Status: look.words, Class: string(s.Status), N: i + 1})
		if s.Status == plan.StepCompleted || s.Status == plan.StepCancelled {
			v.Done++
		}
	}
	v.Total = len(p.Body.Steps)
	for _, cm := range plan.Waiting(p.Run.Comments) {
		for _, n := range cm.Steps {
			if n >= 1 && n <= len(v.Steps) {
				v.Steps[n-1].Comments = append(v.Steps[n-1].Comments, fmt.Sprintf("%s (%s): %s", cm.ID, cmp.Or(cm.ByName, cm.By), cm.Text))
			}
		}
	}
	if d := p.Decision; d != nil {
		who := d.ByName
		if who == "" {
			who = personWords(d.By, d.Channel)
		}
		v.Decision = fmt.Sprintf("%s by %s on %s, %s", upperFirstRune(decisionWords(d.Outcome)), who, d.Channel, d.At.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if plans, err := c.d.Store.Plans(ctx, p.SessionID); err == nil {
		for _, q := range plans {
			if q.Version == p.Version-1 {
				v.PrevVersion, v.Changes = q.Version, stepChanges(q.Body.Steps, p.Body.Steps, answers(q, p.Version))
			}
		}
	}
	if p.Run.Report != nil && p.Status != core.PlanPending {
		c.undoButton(ctx, &v, p, viewer)
	}
	if p.Status == core.PlanPending {
		s, err := c.d.Store.Session(ctx, p.SessionID)
		if err == nil {
			v.Approvals = c.progress(p, s.Address)
		}
		if err == nil && s.ApprovalID == p.ApprovalID && c.mayDecide(viewer, s, c.own(viewer, s.Address)) {
			v.Buttons, v.Approval = true, p.ApprovalID
			v.Action = "/c/" + s.Address.Chat + "/actions"
			v.Edit = "/c/" + s.Address.Chat + "/edit"
			if s.Address.Channel != Name || s.Address.Account != viewer {
				v.Action, v.Edit = "/dashboard/actions?session="+s.ID, ""
			}
		}
	}
	return v
}

// progress is a pending version's approvals under its session's policy, "" when it
// needs one and has none.
func (c *Channel) progress(p core.Plan, a core.Address) string {
	return machine.ApprovalProgress(machine.ApprovalState{Version: p.Version, Approvals: p.Approvals}, machine.PolicyFor(c.d.Policies, a, machine.PlanRisk(p.Body)))
}

// stepChanges says which steps a version added and removed compared with the one
// before, and which of that one's comments it answered; "" when there is nothing to say.
func stepChanges(old, cur []plan.Step, comments []plan.CommentAnswer) string {
	parts := machine.StepDiff(old, cur)
	for _, c := range comments {
		parts = append(parts, c.Words())
	}
	return strings.Join(parts, " · ")
}

// answers are the comments of version prev that its revise sent, with whether the
// version numbered next said it answered each.
func answers(prev core.Plan, next int) []plan.CommentAnswer {
	var out []plan.CommentAnswer
	for _, c := range prev.Run.Comments {
		if c.Sent && (c.AnsweredIn == 0 || c.AnsweredIn == next) {
			out = append(out, plan.CommentAnswer{ID: c.ID, Steps: c.Steps, Text: c.Text, Answered: c.AnsweredIn == next})
		}
	}
	return out
}

// undoButton puts the report's Undo on v when p, the session's current plan, may be
// undone now and viewer may decide there.
func (c *Channel) undoButton(ctx context.Context, v *cardView, p core.Plan, viewer string) {
	s, err := c.d.Store.Session(ctx, p.SessionID)
	if err != nil || s.PlanID != p.ID {
		return
	}
	if _, ok := machine.Undoable(s, &p, &p); !ok || !c.mayDecide(viewer, s, c.own(viewer, s.Address)) {
		return
	}
	v.Undo, v.Approval = true, p.ApprovalID
	v.Action = "/c/" + s.Address.Chat + "/actions"
	if s.Address.Channel != Name || s.Address.Account != viewer {
		v.Action = "/dashboard/actions?session=" + s.ID
	}
}
