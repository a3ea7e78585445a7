package slack

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
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
	if to, moved := strings.CutPrefix(string(data), "REDIRECT "); moved {
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/markdown")
	_, _ = w.Write(data)
}

// share makes user share a file in thread of ch (a message event with subtype file_share,
// no mention); size is the size Slack announces (the content's length when 0).
func (f *fakeSlack) share(ch, user, thread, name, mime string, data []byte, size int, text string) said {
	return f.shareAt(ch, user, thread, name, mime, data, size, text, "")
}

// shareAt is share with the file's url_private on another server (url; "" = the fake).
func (f *fakeSlack) shareAt(ch, user, thread, name, mime string, data []byte, size int, text, url string) said {
	ts := f.userTS()
	f.mu.Lock()
	f.nextFile++
	id := "FU" + ts
	f.shared[id] = data
	f.mu.Unlock()
	if size == 0 {
		size = len(data)
	}
	if url == "" {
		url = f.srv.URL + "/files-pri/" + id
	}
	file := map[string]any{"id": id, "name": name, "title": name, "mimetype": mime, "filetype": "markdown", "size": size,
		"url_private": url, "url_private_download": url}
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

// TestEditedPlanFileTokenStaysWithSlack: a file whose url_private is on another host, or
// that redirects there, is not fetched with the bot token: the other host never sees it,
// and the person is told the file could not be downloaded. Nothing changes.
func TestEditedPlanFileTokenStaysWithSlack(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	e := newEnv(t, func(e *env) { e.Core.Approvers = []string{"slack:" + alice} })
	e.api.name(alice, "alice")
	thread := e.api.userTS()
	sid := e.sid(general, thread)
	e.Model.Push(sid, channeltest.Proposal("Docs cleanup", "Reword intro", "Fix links"))
	e.api.mentionTS(thread, general, alice, "/plan on tidy the docs", "")
	e.waitPhase(general, thread, core.PhaseAwaitingApproval)
	e.Idle()
	for _, tc := range []struct{ name, data, url string }{
		{"other host", "# x\n", other.URL + "/elsewhere"},
		// Go keeps Authorization on a redirect to the same host name on another port, so
		// the other server is named differently, as any host outside Slack is.
		{"redirect", "REDIRECT " + strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/moved", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans, notices := len(e.Plans(sid)), e.api.countText(general, "could not download")
			e.api.shareAt(general, alice, thread, "plan.md", "text/markdown", []byte(tc.data), 4, "", tc.url)
			e.api.waitFor("another download notice", func() bool { return e.api.countTextLocked(general, "could not download") > notices })
			e.Idle()
			if n := len(e.Plans(sid)); n != plans {
				t.Errorf("%d plans, want %d", n, plans)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "/moved") {
		t.Errorf("the other host saw %q, want the redirected request only (without the token)", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, e.api.botToken) {
			t.Errorf("the other host got the bot token: %q", s)
		}
	}
}

// countText counts the messages in ch containing s.
func (f *fakeSlack) countText(ch, s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.countTextLocked(ch, s)
}

// countTextLocked is countText for a caller holding f.mu (waitFor's condition).
func (f *fakeSlack) countTextLocked(ch, s string) int {
	n := 0
	for _, m := range f.msgs {
		if m.Channel == ch && strings.Contains(m.shown(), s) {
			n++
		}
	}
	return n
}
