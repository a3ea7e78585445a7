package web

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/plangate/plangate/core"
)

// TestBrowserEditUpload: in a real browser, the card's Edit takes the downloaded plan file
// back with a step added, and the v2 card (edited by alice) appears live, waiting.
func TestBrowserEditUpload(t *testing.T) {
	e, alice, conv := pendingInBrowser(t, "add a changelog", proposal("Add a changelog", "Create CHANGELOG.md", "Link it from the README"))
	s := e.session("alice", conv)
	md := e.signIn("alice").get("/plans/" + s.PlanID + ".md")
	path := filepath.Join(t.TempDir(), "plan.md")
	edited := strings.Replace(md, "- [ ] Link it from the README\n", "- [ ] Link it from the README\n- [ ] Mention it in CONTRIBUTING\n", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, alice, "uploading the edited plan",
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] details.edit summary`)),
		chromedp.SetUploadFiles(chromedp.CSS(`section.card[aria-label="Plan v1"] input[type="file"]`), []string{path}),
		chromedp.Click(chromedp.CSS(`section.card[aria-label="Plan v1"] .upload-edit`)),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v2"] button.accept`)),
		chromedp.WaitNotPresent(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .changes`); got != "Changes from v1: + Mention it in CONTRIBUTING" {
		t.Fatalf("v2's changes: %q", got)
	}
	if got := text(t, alice, `section.card[aria-label="Plan v2"] .edited`); got != "Edited by web:alice" {
		t.Fatalf("v2's card does not say who edited it: %q", got)
	}
}

// pendingInBrowser signs alice in in a real browser, starts a conversation and asks for
// goal; the model answers with proposal, and its v1 card waits for a decision.
func pendingInBrowser(t *testing.T, goal string, proposal core.ModelResponse) (*env, context.Context, string) {
	t.Helper()
	root := startBrowser(t)
	e := newEnv(t, "web:alice")
	alice := browserPerson(t, root)
	signInBrowser(t, alice, e, "alice")
	conv := newConversationBrowser(t, alice)
	e.model.Push(address("alice", conv).SessionID(), proposal)
	do(t, alice, "starting plan mode",
		chromedp.SendKeys(chromedp.CSS("#text"), "/plan on "+goal),
		chromedp.Click(chromedp.CSS("#send-button")),
		chromedp.WaitVisible(chromedp.CSS(`section.card[aria-label="Plan v1"] button.accept`)))
	return e, alice, conv
}
