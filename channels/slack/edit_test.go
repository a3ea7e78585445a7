package slack

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// serveShared serves a shared file at its url_private, to the bot token only, as Slack does.
func (f *fakeSlack) serveShared(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	if strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != f.botToken {
		http.Error(w, "bad token", http.StatusForbidden)
		return
	}
	f.mu.Lock()
	data, ok := f.shared[id]
	f.calls = append(f.calls, apiCall{Method: "download " + id})
	f.bump()
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/markdown")
	_, _ = w.Write(data)
}

// share makes user share a file in thread of ch (a message event with subtype file_share,
// no mention); size is the size Slack announces (the content's length when 0).
func (f *fakeSlack) share(ch, user, thread, name, mime string, data []byte, size int, text string) said {
	ts := f.userTS()
	f.mu.Lock()
	f.nextFile++
	id := "FU" + ts
	f.shared[id] = data
	f.mu.Unlock()
	if size == 0 {
		size = len(data)
	}
	file := map[string]any{"id": id, "name": name, "title": name, "mimetype": mime, "filetype": "markdown", "size": size,
		"url_private": f.srv.URL + "/files-pri/" + id, "url_private_download": f.srv.URL + "/files-pri/" + id}
	inner := map[string]any{
		"type": "message", "subtype": "file_share", "channel_type": "channel", "user": user, "text": text,
		"ts": ts, "channel": ch, "event_ts": ts, "thread_ts": thread, "files": []any{file},
	}
	eid := "Ev" + ts
	return said{EventID: eid, TS: ts, Envelope: f.envelope("events_api", f.eventCallback(eid, inner), 0)}
}

func (f *fakeSlack) downloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c.Method, "download ") {
			n++
		}
	}
	return n
}

// TestEditedPlanFileInThread: an approver shares an edited copy of the plan file in the
// plan's thread. Broken, too big, non-UTF-8 and unchanged files and a file from someone
// who is not an approver each get one notice and change nothing; a good one becomes v2
// "edited by alice", which waits for a decision.
func TestEditedPlanFileInThread(t *testing.T) {
	e := newEnv(t, func(e *env) { e.Core.Approvers = []string{"slack:" + alice} })
	e.api.name(alice, "alice")
	e.api.name(bob, "bob")
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"))
	e.api.mentionTS(thread, general, alice, "/plan on tidy the docs", "")
	v1 := e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	e.api.waitFile(general, "docs-cleanup-v1.md")
	plan := e.planMsg(general, v1.ApprovalID)
	e.Idle()
	raw, err := os.ReadFile(e.Plans(sid)[0].File)
	if err != nil {
		t.Fatal(err)
	}
	file := string(raw)

	for _, tc := range []struct {
		name, user, text string
		data             string
		size             int
		fetched          bool
	}{
		{"broken checklist", alice, "line 12: a step must be a checklist item", strings.Replace(file, "- [ ] Fix links", "- Fix links", 1), 0, true},
		{"too big", alice, "is 300 KB; an edited plan file may be at most 256 KB", file, 300 << 10, false},
		{"not UTF-8", alice, "is not valid UTF-8 text", strings.Replace(file, "Fix links", "Fix \xff links", 1), 0, true},
		{"unchanged", alice, "The edited plan is the same as the current one", file, 0, true},
		{"not an approver", bob, "Only approvers can decide on plans here (bob is not one)", file + "x", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans, events, replies, gets := len(e.Plans(sid)), len(e.Events(sid)), len(e.Replies(sid)), e.api.downloads()
			e.api.share(general, tc.user, thread, "plan.md", "text/markdown", []byte(tc.data), tc.size, "")
			e.api.waitText(general, tc.text)
			e.Idle()
			if s := e.Session(sid); s.Version != v1.Version || s.ApprovalID != v1.ApprovalID {
				t.Errorf("the session changed: %+v", s)
			}
			if n := len(e.Plans(sid)); n != plans {
				t.Errorf("%d plans, want %d", n, plans)
			}
			evs := e.Events(sid)
			if tc.user == bob {
				if len(evs) != events+1 || evs[len(evs)-1] != core.EventRefused {
					t.Errorf("events %v, want one refused row more", evs)
				}
			} else if len(evs) != events {
				t.Errorf("events %v, want %d", evs, events)
			}
			if rs := e.Replies(sid); len(rs) != replies+1 || rs[len(rs)-1].Kind != core.ReplyNotice {
				t.Errorf("replies after the file: %+v, want one notice", rs[replies:])
			}
			if fetched := e.api.downloads() > gets; fetched != tc.fetched {
				t.Errorf("downloaded: %v, want %v", fetched, tc.fetched)
			}
		})
	}

	edited := strings.Replace(file, "- [ ] Fix links\n", "- [ ] Fix links\n- [ ] Proofread the changelog\n", 1)
	e.api.share(general, alice, thread, "plan.md", "text/markdown", []byte(edited), 0, "")
	e.api.waitFile(general, "docs-cleanup-v2.md")
	e.Idle()
	s := e.Session(sid)
	plans := e.Plans(sid)
	if len(plans) != 2 || plans[0].Status != core.PlanSuperseded || plans[1].Status != core.PlanPending ||
		plans[1].EditedBy != "slack:"+alice || s.ApprovalID != plans[1].ApprovalID || s.Phase != core.PhaseAwaitingApproval {
		t.Fatalf("after the edit: session %+v plans %+v", s, plans)
	}
	v2 := e.planMsg(general, s.ApprovalID)
	if !strings.Contains(v2.shown(), "edited by alice") || !strings.Contains(v2.shown(), "Changes from v1: + Proofread the changelog") || v2.Thread != thread {
		t.Errorf("v2 message %q in thread %q", v2.shown(), v2.Thread)
	}
	if rs := e.Replies(sid); rs[len(rs)-1].Kind != core.ReplyPlan {
		t.Errorf("last reply kind %s, want plan", rs[len(rs)-1].Kind)
	}
	if len(e.current(general, plan.TS).buttons()) != 0 {
		t.Errorf("v1 still has buttons after it was superseded")
	}
}
