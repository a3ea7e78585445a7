package discord

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// serveAttachment serves a person's attachment at its CDN path (the adapter's transport
// sends every host to the fake).
func (f *fakeDiscord) serveAttachment(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	data, ok := f.attachments[r.URL.Path]
	f.calls = append(f.calls, apiCall{Method: r.Method, Path: r.URL.Path})
	f.notifyLocked()
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// replyWithFile dispatches a MESSAGE_CREATE from u in channel that replies to the bot's
// message to with an attachment; size is the size Discord announces (the content's length
// when 0).
func (f *fakeDiscord) replyWithFile(channel string, u user, to shownMsg, name string, data []byte, size int) string {
	f.mu.Lock()
	id := f.newIDLocked()
	path := "/attachments/" + channel + "/" + id + "/" + name
	f.attachments[path] = data
	ref := f.messageJSON(&to)
	f.mu.Unlock()
	if size == 0 {
		size = len(data)
	}
	f.dispatch("MESSAGE_CREATE", map[string]any{
		"id": id, "channel_id": channel, "guild_id": "G1", "author": u.json(), "type": 19, "content": "",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "mentions": []any{}, "member": map[string]any{"roles": []any{}},
		"message_reference":  map[string]any{"message_id": to.ID, "channel_id": channel, "guild_id": "G1"},
		"referenced_message": ref,
		"attachments": []any{map[string]any{"id": id, "filename": name, "content_type": "text/markdown; charset=utf-8",
			"size": size, "url": "https://cdn.discordapp.com" + path}},
	})
	return id
}

// TestEditedPlanAttachment: an attachment on a reply to the plan message is the edited
// plan. A broken or too big file gets one notice and changes nothing; a good one becomes
// v2 "edited by Alice", which waits for a decision.
func TestEditedPlanAttachment(t *testing.T) {
	e := newEnv(t)
	e.Model.Push(sid("C1"), channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"))
	e.fd.say("C1", alice, "/plan on tidy the docs", true)
	plan := e.waitPlan("C1", "docs-cleanup-v1.md")
	v1 := e.waitPhase("C1", core.PhaseAwaitingApproval)
	e.Idle()
	file := plan.Files[0].Data

	for i, tc := range []struct {
		name, data, text string
		size             int
	}{
		{"broken checklist", strings.Replace(file, "- [ ] Fix links", "- Fix links", 1), "line 12: a step must be a checklist item", 0},
		{"too big", file, "is 300 KB; an edited plan file may be at most 256 KB", 300 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans, replies := len(e.Plans(sid("C1"))), len(e.Replies(sid("C1")))
			e.fd.replyWithFile("C1", alice, plan, "plan-"+strconv.Itoa(i)+".md", []byte(tc.data), tc.size)
			e.fd.waitText("C1", tc.text)
			e.Idle()
			if s := e.Session(sid("C1")); s.ApprovalID != v1.ApprovalID || len(e.Plans(sid("C1"))) != plans {
				t.Errorf("the edit changed the session or the plans: %+v", s)
			}
			if rs := e.Replies(sid("C1")); len(rs) != replies+1 || rs[len(rs)-1].Kind != core.ReplyNotice {
				t.Errorf("replies %+v, want one notice", rs[replies:])
			}
		})
	}
	if n := len(e.fd.callsMatching(`/attachments/.*plan-1\.md`)); n != 0 {
		t.Errorf("the file announced as too big was downloaded %d times", n)
	}

	if n := len(e.fd.callsMatching(`/attachments/.*plan-0\.md`)); n != 1 {
		t.Errorf("the broken file was downloaded %d times, want once", n)
	}
	edited := strings.Replace(file, "- [ ] Fix links\n", "- [ ] Fix links\n- [ ] Proofread the changelog\n", 1)
	e.fd.replyWithFile("C1", alice, plan, "plan.md", []byte(edited), 0)
	v2 := e.waitPlan("C1", "docs-cleanup-v2.md")
	e.Idle()
	plans := e.Plans(sid("C1"))
	if len(plans) != 2 || plans[1].EditedBy != "discord:"+alice.id || plans[1].Status != core.PlanPending || plans[0].Status != core.PlanSuperseded {
		t.Fatalf("plans after the edit: %+v", plans)
	}
	if !strings.Contains(v2.Content, "edited by Alice") || !strings.Contains(v2.Content, "Changes from v1: + Proofread the changelog") {
		t.Errorf("v2 message %q", v2.Content)
	}
}
