package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/plangate/plangate/core"
)

// TestBrowser drives the chat and the dashboard in headless Chromium at a laptop's and a
// phone's size: one browser for the whole test, a browser context per person.
func TestBrowser(t *testing.T) {
	root := startBrowser(t)
	e := newEnv(t, "web:alice", "telegram:42")
	e.web.refresh = 200 * time.Millisecond

	// Two plans wait in Telegram sessions, proposed through the engine.
	tgA := core.Address{Channel: "telegram", Account: "900", Chat: "555"}
	tgB := core.Address{Channel: "telegram", Account: "900", Chat: "556"}
	e.model.Push(tgA.SessionID(), scopedProposal("Rotate the service logs", []string{"deploy/logrotate.conf"}, "Add a logrotate rule", "Test it on staging"))
	e.model.Push(tgB.SessionID(), scopedProposal("Pin the base image", []string{"Dockerfile"}, "Pin the digest"))
	for i, a := range []core.Address{tgA, tgB} {
		go func() {
			_ = e.tg.Deliver(context.Background(), core.Message{ID: string(rune('1' + i)), Address: a, Sender: core.Person{ID: "42", Name: "dana"}, Text: "/plan on " + a.Chat, Direct: true})
		}()
	}
	waitFor(t, "the telegram plans", func() bool {
		a, _ := e.st.Session(context.Background(), tgA.SessionID())
		b, _ := e.st.Session(context.Background(), tgB.SessionID())
		return a.Phase == core.PhaseAwaitingApproval && b.Phase == core.PhaseAwaitingApproval
	})

	// The first sign-in lands on a message box; nothing is stored until something is sent.
	alice := browserPerson(t, root)
	signInBrowser(t, alice, e, "alice")
	do(t, alice, "the first page", chromedp.WaitVisible(chromedp.CSS("#text")))
	inView(t, alice, "the first page", "#text", "#send-button")
	if ids := e.madeIDs("alice"); len(ids) != 0 {
		t.Fatalf("signing in stored conversations %q", ids)
	}

	// The first message makes the conversation; the plan it asks for comes back as a card.
	var once sync.Once
	e.model.Hook(func(req core.ModelRequest) {
		if strings.HasPrefix(req.SessionID, "web:alice:") {
			once.Do(func() {
				e.model.Push(req.SessionID, scopedProposal("Add a changelog", []string{"CHANGELOG.md", "README.md"}, "Create CHANGELOG.md", "Link it from the README"))
			})
		}
	})
	do(t, alice, "asking for a plan",
		chromedp.SendKeys(chromedp.CSS("#text"), "/plan on add a changelog"),
		chromedp.Click(chromedp.CSS("#send-button")),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	e.model.Hook(nil)
	conv := strings.TrimPrefix(eval[string](t, alice, "location.pathname"), "/c/")
	if ids := e.madeIDs("alice"); len(ids) != 1 || ids[0] != conv {
		t.Fatalf("the first message stored conversations %q, want [%s]", ids, conv)
	}
	sid := address("alice", conv).SessionID()
	eval[int](t, alice, "window.notReloaded = 1")
	for sel, want := range map[string]string{
		".convo-title":                                 "Add a changelog",
		".convos li.current .ctitle":                   "Add a changelog",
		".convos li.current .state":                    "waiting for approval",
		`section.card[aria-label="Plan v1"] .badge`:    "waiting for approval",
		`section.card[aria-label="Plan v1"] .grants`:   "May change",
		`section.card[aria-label="Plan v1"] .grant dd`: "CHANGELOG.md, README.md",
	} {
		if got := text(t, alice, sel); !strings.Contains(got, want) {
			t.Errorf("%s says %q, want %q", sel, got, want)
		}
	}
	if got := text(t, alice, `section.card[aria-label="Plan v1"] .grants`); !strings.Contains(got, "Budget") || !strings.Contains(got, "at most 2 files") {
		t.Errorf("v1's grants leave out the budget: %q", got)
	}
	inView(t, alice, "the desktop chat with v1", "#text", `section.card[aria-label="Plan v1"] button.accept`)

	e.model.Push(sid, scopedProposal("Add a changelog", []string{"CHANGELOG.md", "README.md", "CONTRIBUTING.md"}, "Create CHANGELOG.md", "Link it from the README", "Mention it in CONTRIBUTING"))
	do(t, alice, "revising with feedback",
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] details.revise summary`)),
		chromedp.SendKeys(chromedp.CSS(`section.card[aria-label="Plan v1"] details.revise textarea`), "also mention it in CONTRIBUTING"),
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] .send-feedback`)),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v2"] button.accept`)),
		chromedp.WaitNotPresent(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .changes`); got != "Changes from v1: + Mention it in CONTRIBUTING" {
		t.Fatalf("v2's changes: %q", got)
	}
	if got := text(t, alice, `section.card[aria-label="Plan v1"] .badge`); got != "sent back for revision" {
		t.Fatalf("v1's badge after the revision: %q", got)
	}
	newest := `section.card[aria-label="Plan v2"] button.accept`
	inView(t, alice, "the desktop chat with v2", "#text", newest)
	noRawText(t, alice, "the chat", conv, sid)
	noPageScroll(t, alice, "the desktop chat")
	shot(t, alice, "web-chat.png")

	// A phone: one column, the message box and the newest card's buttons in view at once,
	// the conversations behind the header's button.
	do(t, alice, "phone width", chromedp.EmulateViewport(phoneW, phoneH), chromedp.Navigate(e.srv.URL+"/c/"+conv), chromedp.WaitVisible(chromedp.CSS(newest)))
	inView(t, alice, "the phone chat", "#text", "#send-button", newest, `section.card[aria-label="Plan v2"] details.revise summary`, "#convos-toggle")
	noPageScroll(t, alice, "the phone chat")
	if got := eval[string](t, alice, fmt.Sprintf(inViewJS, "#convos")); got == "" {
		t.Error("on a phone the conversation list is shown before it is asked for")
	}
	shot(t, alice, "web-phone.png")
	do(t, alice, "opening the drawer", chromedp.Click(chromedp.CSS("#convos-toggle")), chromedp.WaitVisible(chromedp.CSS("#convos")))
	inView(t, alice, "the phone's drawer", ".convos li.current a")
	if got := eval[string](t, alice, `document.getElementById("convos-toggle").getAttribute("aria-expanded")`); got != "true" {
		t.Errorf("the open drawer's button says aria-expanded=%q", got)
	}
	do(t, alice, "closing the drawer", chromedp.Click(chromedp.CSS("#convos-toggle")), chromedp.WaitNotVisible(chromedp.CSS("#convos")))

	do(t, alice, "desktop width", chromedp.EmulateViewport(desktopW, desktopH), chromedp.Navigate(e.srv.URL+"/c/"+conv), chromedp.WaitVisible(chromedp.CSS(newest)))
	eval[int](t, alice, "window.notReloaded = 1")
	e.model.Push(sid,
		progress(map[string]string{"Create CHANGELOG.md": "completed", "Link it from the README": "in_progress"}),
		progress(map[string]string{"Link it from the README": "completed", "Mention it in CONTRIBUTING": "completed"}),
		core.ModelResponse{Text: "Done: **CHANGELOG.md** exists and is linked."})
	do(t, alice, "accepting v2",
		chromedp.Click(chromedp.CSS(newest)),
		chromedp.WaitVisible(chromedp.CSS(`section.card.status-completed[aria-label="Plan v2"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .progress`); got != "3 of 3 steps done" {
		t.Fatalf("the checklist after completion: %q", got)
	}
	if n := eval[int](t, alice, `document.querySelectorAll('section.card[aria-label="Plan v2"] li.step.completed').length`); n != 3 {
		t.Fatalf("%d completed steps on the card, want 3", n)
	}
	// The report posted at completion is shown on the card, inline, not as a message.
	do(t, alice, "the report on the card", chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v2"] details.report h2`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] details.report summary`); got != "Report: files not measured, 0 commands, nothing outside the plan, tokens not reported" {
		t.Fatalf("the report's line on the card: %q", got)
	}
	if got := text(t, alice, `section.card[aria-label="Plan v2"] details.report`); !strings.Contains(got, "Changes by step") || !strings.Contains(got, "Outside the accepted version") {
		t.Fatalf("the report on the card: %q", got)
	}
	if n := eval[int](t, alice, `[...document.querySelectorAll('li.item')].filter(li => li.textContent.includes('Report of plan v2')).length`); n != 0 {
		t.Fatalf("the report is also %d message(s) of its own", n)
	}
	if eval[int](t, alice, "window.notReloaded || 0") != 1 {
		t.Fatal("the page reloaded: the updates did not arrive live")
	}
	do(t, alice, "the side list catching up", chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(".convos li.current")))
	if got := text(t, alice, ".convos li.current .state"); got != "completed" {
		t.Errorf("the finished conversation's state in the list: %q", got)
	}

	browserDashboard(t, root, e, alice, tgA, tgB)
}

// browserDashboard: the dashboard is a compact list of what waits, a row per plan that
// opens to the card; a decision there reaches Telegram, and the audit is in sentences.
func browserDashboard(t *testing.T, root context.Context, e *env, alice context.Context, tgA, tgB core.Address) {
	// Bob, not an approver, is not shown the Telegram sessions at all.
	bob := browserPerson(t, root)
	signInBrowser(t, bob, e, "bob")
	do(t, bob, "opening the dashboard", chromedp.Navigate(e.srv.URL+"/dashboard"), chromedp.WaitVisible(chromedp.CSS("main.dashboard")))
	if got := text(t, bob, "main.dashboard"); !strings.Contains(got, "Nothing is waiting.") || strings.Contains(got, "Rotate the service logs") {
		t.Fatalf("bob's dashboard: %q", got)
	}
	// Alice's second browser keeps the dashboard open while she decides in the first.
	other := browserPerson(t, root)
	signInBrowser(t, other, e, "alice")
	do(t, other, "opening the dashboard", chromedp.Navigate(e.srv.URL+"/dashboard"), chromedp.WaitVisible(chromedp.CSS(".row")))

	rowA := `.row[data-session="` + tgA.SessionID() + `"]`
	rowB := `.row[data-session="` + tgB.SessionID() + `"]`
	for _, size := range [][2]int64{{phoneW, phoneH}, {desktopW, desktopH}} {
		do(t, alice, "the dashboard", chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(e.srv.URL+"/dashboard"), chromedp.WaitVisible(chromedp.CSS(rowB)))
		where := fmt.Sprintf("the dashboard at %dpx", size[0])
		inView(t, alice, where, rowA+" summary", rowB+" summary")
		if got := eval[bool](t, alice, `!!document.querySelector(".row details[open]")`); got {
			t.Errorf("%s: a row is open before it is clicked", where)
		}
		noRawText(t, alice, where)
		if size[0] == phoneW {
			shot(t, alice, "web-dashboard-phone.png")
		}
	}
	if got := text(t, alice, rowA+" summary"); !strings.Contains(got, "Rotate the service logs v1") || !strings.Contains(got, "waiting for approval") ||
		!strings.Contains(strings.ToLower(got), "telegram") || !strings.Contains(got, "chat 555") {
		t.Fatalf("the compact row: %q", got)
	}
	do(t, alice, "opening a row", chromedp.Click(chromedp.CSS(rowA+" summary")), chromedp.WaitVisible(chromedp.CSS(rowA+" button.accept")))
	if got := text(t, alice, rowA+" .grants"); !strings.Contains(got, "deploy/logrotate.conf") {
		t.Fatalf("the opened row's grants: %q", got)
	}
	if got := eval[bool](t, alice, `!!document.querySelector("`+strings.ReplaceAll(rowB, `"`, `\"`)+` details[open]")`); got {
		t.Error("opening one row opened another")
	}
	// The list refreshes by itself (every 200 ms here) and keeps the opened row open.
	seen := e.refreshes.Load()
	waitFor(t, "two refreshes of the open dashboard", func() bool { return e.refreshes.Load() >= seen+4 })
	inView(t, alice, "the opened row after refreshes", rowA+" button.accept")
	shot(t, alice, "web-dashboard.png")

	// Alice accepts the first Telegram plan from the dashboard; the Telegram chat is told.
	do(t, alice, "accepting on the dashboard", chromedp.Click(chromedp.CSS(rowA+" button.accept")), chromedp.WaitVisible(chromedp.CSS(".note")))
	if got := text(t, alice, ".note"); !strings.Contains(got, `Accept for plan v1 "Rotate the service logs"`) {
		t.Errorf("the note after the decision: %q", got)
	}
	waitFor(t, "the telegram chat to say it was accepted", func() bool {
		for _, r := range e.tg.Replies() {
			if strings.Contains(r.Text, `Accepted plan v1 "Rotate the service logs"`) {
				return true
			}
		}
		return false
	})
	// The other browser's dashboard, open all along, drops the decided plan by itself.
	do(t, other, "the other dashboard refreshing", chromedp.WaitNotPresent(chromedp.CSS(rowA)), chromedp.WaitVisible(chromedp.CSS(rowB)))

	// The session's audit: sentences with times, no JSON and no stored names.
	do(t, alice, "the session page", chromedp.Navigate(e.srv.URL+"/dashboard/sessions/"+tgA.SessionID()), chromedp.WaitVisible(chromedp.CSS(".timeline li")))
	got := text(t, alice, ".timeline")
	for _, want := range []string{"The agent proposed v1: “Rotate the service logs”.", "alice accepted v1."} {
		if !strings.Contains(got, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, got)
		}
	}
	if n := eval[int](t, alice, `document.querySelectorAll(".timeline li time[datetime]").length`); n == 0 || n != eval[int](t, alice, `document.querySelectorAll(".timeline li").length`) {
		t.Errorf("%d of the timeline's lines have a time", n)
	}
	if got := text(t, alice, "h1"); got != "Rotate the service logs" {
		t.Errorf("the session page is titled %q", got)
	}
	noRawText(t, alice, "the session page", tgA.SessionID())
	shot(t, alice, "web-audit.png")
}
