package web

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/plangate/plangate/core"
)

var screenshots = flag.Bool("screenshots", false, "write the browser test's screenshots to docs/ (the ones the README shows)")

// browserPath finds Chromium: Debian's package installs /usr/bin/chromium.
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// noBrowser skips the test, except in CI, where a missing browser is a failure: .ci/run
// installs one.
func noBrowser(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("no headless browser in CI: %s", why)
	}
	t.Skipf("no headless browser: %s", why)
}

// startBrowser starts one headless Chromium for the test and returns its root context;
// each person gets a browser context of their own (separate cookies) from it.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := browserPath()
	if path == "" {
		noBrowser(t, "chromium is not installed (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelRoot(); cancelAlloc() })
	if err := chromedp.Do(root); err != nil {
		noBrowser(t, err.Error())
	}
	return root
}

// browserPerson is a browser context (its own cookies) with a bound on every step.
func browserPerson(t *testing.T, root context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	bounded, cancel2 := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancel2)
	return bounded
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs")
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func signInBrowser(t *testing.T, ctx context.Context, e *env, user string) {
	t.Helper()
	do(t, ctx, "signing in as "+user,
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong-token"),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	if got := text(t, ctx, ".error"); !strings.Contains(got, "That token is not right") {
		t.Fatalf("a wrong token shows %q", got)
	}
	do(t, ctx, "signing in as "+user,
		chromedp.SendKeys(chromedp.CSS("#token"), testUsers[user]),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS(".who")))
}

// TestBrowser drives the chat and the dashboard in headless Chromium: one browser for the
// whole test, a browser context per person.
func TestBrowser(t *testing.T) {
	root := startBrowser(t)
	e := newEnv(t, "web:alice", "telegram:42")
	e.web.refresh = 200 * time.Millisecond

	// A plan waits in a Telegram session, proposed through the engine.
	tg := core.Address{Channel: "telegram", Account: "900", Chat: "555"}
	e.model.Push(tg.SessionID(), proposal("Rotate the service logs", "Add a logrotate rule", "Test it on staging"))
	go func() {
		_ = e.tg.Deliver(context.Background(), core.Message{ID: "1", Address: tg, Sender: core.Person{ID: "42", Name: "dana"}, Text: "/plan on rotate the logs", Direct: true})
	}()
	waitFor(t, "the telegram plan", func() bool {
		s, _ := e.st.Session(context.Background(), tg.SessionID())
		return s.Phase == core.PhaseAwaitingApproval
	})

	alice := browserPerson(t, root)
	signInBrowser(t, alice, e, "alice")
	do(t, alice, "starting a conversation", chromedp.Click(chromedp.CSS("#new-conversation")), chromedp.WaitVisible(chromedp.CSS("#text")))
	conv := strings.TrimPrefix(eval[string](t, alice, "location.pathname"), "/c/")
	if ids := e.madeIDs("alice"); len(ids) != 1 || ids[0] != conv {
		t.Fatalf("New conversation stored %q, want [%s]", ids, conv)
	}
	sid := address("alice", conv).SessionID()
	eval[int](t, alice, "window.notReloaded = 1")

	e.model.Push(sid, proposal("Add a changelog", "Create CHANGELOG.md", "Link it from the README"))
	do(t, alice, "starting plan mode",
		chromedp.SendKeys(chromedp.CSS("#text"), "/plan on add a changelog"),
		chromedp.Click(chromedp.CSS("#send-button")),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v1"] .badge`); got != "Status: waiting for a decision" {
		t.Fatalf("v1's badge: %q", got)
	}

	e.model.Push(sid, proposal("Add a changelog", "Create CHANGELOG.md", "Link it from the README", "Mention it in CONTRIBUTING"))
	do(t, alice, "revising with feedback",
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] details.revise summary`)),
		chromedp.SendKeys(chromedp.CSS(`section.card[aria-label="Plan v1"] textarea`), "also mention it in CONTRIBUTING"),
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] .send-feedback`)),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v2"] button.accept`)),
		chromedp.WaitNotPresent(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .changes`); got != "Changes from v1: + Mention it in CONTRIBUTING" {
		t.Fatalf("v2's changes: %q", got)
	}
	if got := text(t, alice, `section.card[aria-label="Plan v1"] .badge`); got != "Status: sent back for revision" {
		t.Fatalf("v1's badge after the revision: %q", got)
	}
	shot(t, alice, "web-chat.png")

	e.model.Push(sid,
		progress(map[string]string{"Create CHANGELOG.md": "completed", "Link it from the README": "in_progress"}),
		progress(map[string]string{"Link it from the README": "completed", "Mention it in CONTRIBUTING": "completed"}),
		core.ModelResponse{Text: "Done: **CHANGELOG.md** exists and is linked."})
	do(t, alice, "accepting v2",
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v2"] button.accept`)),
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
	if got := text(t, alice, `section.card[aria-label="Plan v2"] details.report summary`); got != "Report: files not measured, 0 commands, nothing outside the plan" {
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

	// Bob, not an approver, is not shown the Telegram session at all.
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
	if got := text(t, other, ".rows"); !strings.Contains(got, "Rotate the service logs") {
		t.Fatalf("alice's dashboard: %q", got)
	}

	// Alice accepts the Telegram plan from the dashboard; the Telegram chat is told.
	do(t, alice, "opening the dashboard", chromedp.Navigate(e.srv.URL+"/dashboard"), chromedp.WaitVisible(chromedp.CSS(".row button.accept")))
	if got := strings.ToLower(text(t, alice, ".row .where")); !strings.Contains(got, "telegram") || !strings.Contains(got, "chat 555") {
		t.Fatalf("the dashboard row: %q", got)
	}
	shot(t, alice, "web-dashboard.png")
	do(t, alice, "accepting on the dashboard", chromedp.Click(chromedp.CSS(".row button.accept")), chromedp.WaitVisible(chromedp.CSS(".note")))
	waitFor(t, "the telegram chat to say it was accepted", func() bool {
		for _, r := range e.tg.Replies() {
			if strings.Contains(r.Text, `Accepted plan v1 "Rotate the service logs"`) {
				return true
			}
		}
		return false
	})

	// The other browser's dashboard, open all along, drops the decided plan by itself.
	do(t, other, "the other dashboard refreshing", chromedp.WaitNotPresent(chromedp.CSS(".row")))
	if got := text(t, other, "main.dashboard"); !strings.Contains(got, "Nothing is waiting.") {
		t.Fatalf("the other dashboard after the decision: %q", got)
	}

	// A phone's width: nothing is wider than the screen.
	do(t, alice, "phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/c/"+conv), chromedp.WaitVisible(chromedp.CSS("#text")))
	if w := eval[int](t, alice, "document.documentElement.scrollWidth"); w > 390 {
		t.Fatalf("the chat is %dpx wide on a 390px screen", w)
	}
}
