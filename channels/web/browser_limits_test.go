package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/plangate/plangate/store"
)

// TestBrowserLimits: in a real browser, New conversation makes one conversation (stored),
// a second click over max_conversations says why and makes none, and a second tab over
// max_streams says why it is not live instead of reconnecting.
func TestBrowserLimits(t *testing.T) {
	root := startBrowser(t)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := configured(t, st, Config{Enabled: true, Users: testUsers, MaxConversations: 1, MaxStreams: 1}, Deps{})
	e.runIdle(t)

	alice := browserPerson(t, root)
	signInBrowser(t, alice, e, "alice")
	conv := newConversationBrowser(t, alice)
	do(t, alice, "the conversation going live", chromedp.WaitVisible(chromedp.CSS(`body[data-live="on"]`)))
	if ids := e.madeIDs("alice"); len(ids) != 1 || ids[0] != conv {
		t.Fatalf("stored conversations %q, want [%s]", ids, conv)
	}

	tab, closeTab := chromedp.NewContext(alice)
	defer closeTab()
	do(t, tab, "a second tab of the conversation", chromedp.Navigate(e.srv.URL+"/c/"+conv),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="off"]`)))
	if got := text(t, tab, "#status"); !strings.Contains(got, "max_streams") {
		t.Fatalf("the second tab's status: %q", got)
	}

	do(t, alice, "one conversation too many", chromedp.Click(chromedp.CSS("#new-conversation")),
		chromedp.WaitNotPresent(chromedp.CSS("#text")))
	if got := eval[string](t, alice, "document.body.innerText"); !strings.Contains(got, "max_conversations") {
		t.Fatalf("the refusal: %q", got)
	}
	if ids := e.madeIDs("alice"); len(ids) != 1 {
		t.Fatalf("stored conversations after the refusal: %q", ids)
	}
}
