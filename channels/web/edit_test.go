package web

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

// upload posts a file as the card's Edit form does: csrf, then the file.
func (c *client) upload(path, name string, data []byte) *http.Response {
	c.e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("csrf", c.csrf)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, c.e.srv.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Plangate-Fetch", "1")
	res, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	return res
}

// TestEditUploadOnTheCard: the pending plan's card has an upload form; a broken file is
// answered in the conversation and changes nothing, an edited one becomes v2, edited by
// alice, whose card waits for a decision.
func TestEditUploadOnTheCard(t *testing.T) {
	e := newEnv(t, "web:alice")
	alice := e.signIn("alice")
	s := e.pendingPlan(alice, "c1", "Add a changelog", "Create CHANGELOG.md", "Link it from the README")
	page := alice.get("/c/c1")
	for _, want := range []string{`action="/c/c1/edit"`, `enctype="multipart/form-data"`, `type="file"`, "Upload the edited plan"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the card lacks %q: %s", want, page)
		}
	}
	md := alice.get("/plans/" + s.PlanID + ".md")

	res := alice.upload("/c/c1/edit", "plan.md", []byte(strings.Replace(md, "- [ ] Link it from the README", "- Link it", 1)))
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d %s", res.StatusCode, body(res))
	}
	waitFor(t, "the refusal", func() bool { return e.shows("alice", "c1", "a step must be a checklist item") })
	if got := e.session("alice", "c1"); got.ApprovalID != s.ApprovalID {
		t.Fatalf("a broken file changed the session: %+v", got)
	}

	bad := *alice
	bad.csrf = "wrong"
	if res := bad.upload("/c/c1/edit", "plan.md", []byte(md)); res.StatusCode != http.StatusForbidden {
		t.Errorf("upload with a wrong CSRF token: %d", res.StatusCode)
	}

	edited := strings.Replace(md, "- [ ] Link it from the README\n", "- [ ] Link it from the README\n- [ ] Mention it in CONTRIBUTING\n", 1)
	if res := alice.upload("/c/c1/edit", "plan.md", []byte(edited)); res.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d %s", res.StatusCode, body(res))
	}
	var s2 core.Session
	waitFor(t, "v2", func() bool {
		s2 = e.session("alice", "c1")
		return s2.ApprovalID != s.ApprovalID && s2.Phase == core.PhaseAwaitingApproval
	})
	e.waitCard("alice", "c1", s2.PlanID)
	p, err := e.st.Plan(t.Context(), s2.PlanID)
	if err != nil || p.Version != 2 || p.EditedBy != "web:alice" || len(p.Body.Steps) != 3 {
		t.Fatalf("v2 %+v %v", p, err)
	}
	if !e.shows("alice", "c1", "edited by alice") {
		t.Errorf("the conversation does not say who edited v2")
	}
}
