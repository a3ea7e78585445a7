package web

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The two screens the layout is checked at: a laptop's and a phone's.
const (
	desktopW, desktopH = 1280, 800
	phoneW, phoneH     = 390, 844
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
		chromedp.WindowSize(desktopW, desktopH),
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

// text is the rendered text of the first element sel matches, read in one evaluation:
// chromedp.Text finds the node, then reads it by its node id, which a document update in
// between (the page a form post loads) invalidates.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](`(e => e ? e.innerText : null)(document.querySelector(`+string(q)+`))`))
	switch {
	case err != nil:
		t.Fatalf("reading %s: %v", sel, err)
	case s == nil:
		t.Fatalf("reading %s: no element matches", sel)
	}
	return *s
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

// newConversationBrowser clicks New conversation and returns the new conversation's id,
// once its page is open (a conversation's message list has a live stream).
func newConversationBrowser(t *testing.T, ctx context.Context) string {
	t.Helper()
	do(t, ctx, "starting a conversation", chromedp.Click(chromedp.CSS("#new-conversation")),
		chromedp.WaitVisible(chromedp.CSS("#transcript[data-stream]")))
	return strings.TrimPrefix(eval[string](t, ctx, "location.pathname"), "/c/")
}

// inViewJS says why the element sel is not wholly inside the window, unscrolled and on
// top at its centre, or "" when it is.
const inViewJS = `(function (sel) {
  var el = document.querySelector(sel);
  if (!el) { return "there is none"; }
  var r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) { return "it is not shown"; }
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {
    return "it is at " + Math.round(r.left) + "," + Math.round(r.top) + "–" + Math.round(r.right) + "," + Math.round(r.bottom) + " of " + innerWidth + "x" + innerHeight;
  }
  var top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (!top || !(el === top || el.contains(top))) { return "it is covered by " + (top ? top.outerHTML.slice(0, 80) : "nothing"); }
  return "";
})(%q)`

// inView fails the test unless every element of sels is visible without scrolling.
func inView(t *testing.T, ctx context.Context, where string, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		if why := eval[string](t, ctx, fmt.Sprintf(inViewJS, sel)); why != "" {
			t.Errorf("%s: %s is not in view: %s", where, sel, why)
		}
	}
}

// rawWords are stored identifiers that must never show on a page.
var rawWords = []string{"awaiting_approval", "in_progress", "auto_accepted", "approval_recorded", "step_updated", "tool_ran", "tool_blocked"}

// noRawText fails the test when the page's visible text has a stored state, JSON, or
// one of ids.
func noRawText(t *testing.T, ctx context.Context, where string, ids ...string) {
	t.Helper()
	page := eval[string](t, ctx, "document.body.innerText")
	for _, w := range append(append([]string{`{"`, `":`}, rawWords...), ids...) {
		if strings.Contains(page, w) {
			t.Errorf("%s shows %q:\n%s", where, w, page)
		}
	}
}

// noPageScroll fails the test when the page itself is wider or taller than the window:
// only the message list scrolls.
func noPageScroll(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	w := eval[int](t, ctx, "document.documentElement.scrollWidth")
	h := eval[int](t, ctx, "document.documentElement.scrollHeight")
	iw, ih := eval[int](t, ctx, "innerWidth"), eval[int](t, ctx, "innerHeight")
	if w > iw || h > ih {
		t.Errorf("%s: the page is %dx%d in a %dx%d window", where, w, h, iw, ih)
	}
}
