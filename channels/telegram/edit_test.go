package telegram

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// getFile answers where a file is, as the Bot API does: its path under /file/bot<token>/.
func (f *fakeAPI) getFile(w http.ResponseWriter, p map[string]string) {
	f.mu.Lock()
	data, ok := f.files[p["file_id"]]
	f.mu.Unlock()
	if !ok {
		writeErr(w, 400, "Bad Request: invalid file_id", 0)
		return
	}
	ok200(w, map[string]any{"file_id": p["file_id"], "file_unique_id": "u" + p["file_id"], "file_size": len(data), "file_path": "documents/" + p["file_id"] + ".md"})
}

// download serves a file's content at its file path.
func (f *fakeAPI) download(w http.ResponseWriter, path string) {
	id := strings.TrimSuffix(strings.TrimPrefix(path, "documents/"), ".md")
	f.mu.Lock()
	data, ok := f.files[id]
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, nil)
		return
	}
	_, _ = w.Write(data)
}

// sendDoc queues a document from u in chat: the file is stored for getFile, size is the
// file_size the message announces (the content's length when 0).
func (f *fakeAPI) sendDoc(chat int64, u user, name, mime string, data []byte, size int, caption string, opts ...msgOpt) int64 {
	f.mu.Lock()
	f.nextMsg++
	msgID := f.nextMsg
	fileID := "up" + strconv.Itoa(msgID)
	f.files[fileID] = data
	f.mu.Unlock()
	if size == 0 {
		size = len(data)
	}
	m := map[string]any{
		"message_id": msgID, "date": time.Now().Unix(), "chat": f.chatJSON(chat),
		"from":     map[string]any{"id": u.id, "is_bot": false, "first_name": u.name, "username": u.name},
		"document": map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID, "file_name": name, "mime_type": mime, "file_size": size},
	}
	if caption != "" {
		m["caption"] = caption
		m["caption_entities"] = entities(caption)
	}
	for _, o := range opts {
		o(f, chat, m)
	}
	return f.push(map[string]any{"message": m})
}

// uploaded is the content of the document the bot sent as name.
func (f *fakeAPI) uploaded(t *testing.T, name string) string {
	t.Helper()
	for _, c := range f.callsOf("sendDocument") {
		if c.File == name {
			return c.Data
		}
	}
	t.Fatalf("the bot sent no document %q", name)
	return ""
}

// TestEditedPlanDocument: an approver answers the plan with an edited copy of its file.
// Broken, too big, non-UTF-8 and unchanged files and an edit by someone who may not decide
// each get one notice and change nothing; a document reply to the plan message becomes
// v2 "edited by alice", which waits for a decision.
func TestEditedPlanDocument(t *testing.T) {
	e := newEnv(t)
	sid := e.sessionID(group)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"))
	e.api.say(group, alice, "/plan@PlanGateBot on tidy the docs")
	doc := e.waitDoc(group, `^plan-.*docs-cleanup-v1\.md$`)
	v1 := e.waitPhase(group, core.PhaseAwaitingApproval)
	e.Idle()
	file := e.api.uploaded(t, doc.Doc)
	if !strings.Contains(file, "- [ ] Fix links\n") {
		t.Fatalf("plan file:\n%s", file)
	}

	refusals := []struct {
		name, text string
		send       func()
	}{
		{"broken checklist", "line 12: a step must be a checklist item", func() {
			e.api.sendDoc(group, alice, "plan.md", "text/markdown", []byte(strings.Replace(file, "- [ ] Fix links", "- Fix links", 1)), 0, "/plan edit")
		}},
		{"too big", "is 300 KB; an edited plan file may be at most 256 KB", func() {
			e.api.sendDoc(group, alice, "big.md", "text/markdown", []byte(file), 300<<10, "", replyTo(doc.ID))
		}},
		{"not UTF-8", "is not valid UTF-8 text", func() {
			e.api.sendDoc(group, alice, "plan.md", "text/markdown", []byte(strings.Replace(file, "Fix links", "Fix \xff links", 1)), 0, "", replyTo(doc.ID))
		}},
		{"unchanged", "The edited plan is the same as the current one", func() {
			e.api.sendDoc(group, alice, "plan.md", "text/markdown", []byte(file), 0, "/plan edit")
		}},
		{"not the owner", "who started this conversation, can decide on plans here", func() {
			e.api.sendDoc(group, bob, "plan.md", "text/markdown", []byte(file+"x"), 0, "", replyTo(doc.ID))
		}},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			plans, events, replies := len(e.Plans(sid)), len(e.Events(sid)), len(e.Replies(sid))
			gets := len(e.api.callsOf("getFile"))
			tc.send()
			e.api.waitText(group, tc.text)
			e.Idle()
			if s := e.session(group); s.Version != v1.Version || s.PlanID != v1.PlanID || s.ApprovalID != v1.ApprovalID {
				t.Errorf("the session changed: %+v", s)
			}
			if n := len(e.Plans(sid)); n != plans {
				t.Errorf("%d plans, want %d", n, plans)
			}
			wantEvents := events
			if tc.name == "not the owner" {
				wantEvents++ // the refused decision is audited
			}
			if evs := e.Events(sid); len(evs) != wantEvents || (wantEvents > events && evs[len(evs)-1] != core.EventRefused) {
				t.Errorf("events %v, want %d", evs, wantEvents)
			}
			if rs := e.Replies(sid); len(rs) != replies+1 || rs[len(rs)-1].Kind != core.ReplyNotice {
				t.Errorf("replies after the file: %+v, want one notice", rs[replies:])
			}
			if n := len(e.api.callsOf("getFile")); tc.name == "too big" && n != gets {
				t.Errorf("a file announced over the limit was fetched")
			}
		})
	}

	edited := strings.Replace(file, "- [ ] Fix links\n", "- [ ] Fix links\n- [ ] Proofread the changelog\n", 1)
	e.api.sendDoc(group, alice, doc.Doc, "text/markdown", []byte(edited), 0, "", replyTo(doc.ID))
	v2doc := e.waitDoc(group, `^plan-.*docs-cleanup-v2\.md$`)
	s := e.waitPhase(group, core.PhaseAwaitingApproval)
	e.Idle()
	plans := e.Plans(sid)
	if len(plans) != 2 || plans[0].Status != core.PlanSuperseded || plans[1].Status != core.PlanPending ||
		plans[1].EditedBy != "telegram:11" || s.ApprovalID != plans[1].ApprovalID || len(plans[1].Body.Steps) != 3 {
		t.Fatalf("plans after the edit: %+v", plans)
	}
	if !strings.Contains(v2doc.Text, "edited by alice") || !strings.Contains(v2doc.Text, "Changes from v1: + Proofread the changelog") {
		t.Errorf("v2 caption %q", v2doc.Text)
	}
	if got := keyboardData(t, v2doc); len(got) != 3 || got[0] != "a:"+s.ApprovalID {
		t.Errorf("v2 buttons %q", got)
	}
	if rs := e.Replies(sid); rs[len(rs)-1].Kind != core.ReplyPlan {
		t.Errorf("last reply kind %s, want plan", rs[len(rs)-1].Kind)
	}
	if !strings.Contains(e.api.uploaded(t, v2doc.Doc), "## Changes from v1") {
		t.Errorf("v2 file has no changes section")
	}
	if len(keyboardData(t, e.msg(group, doc.ID))) != 0 {
		t.Errorf("v1 still has buttons after it was superseded")
	}
}
