package slack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeSlack is a local Slack: the Web API methods plangate calls, the file upload URL of
// the v2 flow, and a Socket Mode websocket. Tests inject envelopes and read back what the
// bot posted, updated, uploaded and acknowledged.
type fakeSlack struct {
	t        testing.TB
	srv      *httptest.Server
	botToken string
	appToken string
	team     string
	botUser  string

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	calls      []apiCall
	msgs       []*shownMsg // every message posted, in order
	ephemerals []ephemeral
	uploads    map[string][]byte // file id -> uploaded bytes
	shared     map[string][]byte // file id -> bytes of a file a person shared (served at url_private)
	views      []openedView
	names      map[string]string // user id -> display name for users.info
	limits     map[string][]int  // method -> Retry-After seconds for the next calls (0 = no header)
	failures   map[string]string // method -> error code for the next call
	nextTS     int64
	nextFile   int
	sentAt     map[string]time.Time // envelope id -> when the websocket wrote it
	acks       map[string]ack
	onPost     func(ch, text string, at time.Time)
	rejectApp  bool // apps.connections.open answers invalid_auth

	outbox chan []byte // envelopes for the websocket
	conns  []*websocket.Conn

	hook *hookSender // when set, envelopes go as Slack's signed HTTP requests instead
}

type apiCall struct {
	Method string
	Form   map[string]string
	At     time.Time
}

// shownMsg is a message as the channel shows it now.
type shownMsg struct {
	Channel string
	TS      string
	Thread  string
	Text    string // the fallback text field
	Blocks  []fakeBlock
	File    string // a shared file's name
	Comment string // its initial comment
	Edits   []string
}

type fakeBlock struct {
	Type    string `json:"type"`
	BlockID string `json:"block_id"`
	Text    *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"text"`
	Elements []struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
		Text     any    `json:"text"`
	} `json:"elements"`
	// Element and Optional are an input block's (a modal's fields).
	Element *struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Options  []struct {
			Value string `json:"value"`
			Text  struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"options"`
	} `json:"element"`
	Optional bool `json:"optional"`
}

// shown is a message's visible text: its sections and context lines, or its file.
func (m shownMsg) shown() string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
		if b.Type == "context" {
			for _, e := range b.Elements {
				if s, ok := e.Text.(string); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	if len(parts) == 0 {
		if m.File != "" {
			return "[file] " + m.File + " " + m.Comment
		}
		return m.Text
	}
	return strings.Join(parts, "\n")
}

// buttons lists the message's buttons as action_id=value.
func (m shownMsg) buttons() []string {
	var out []string
	for _, b := range m.Blocks {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			out = append(out, e.ActionID+"="+e.Value)
		}
	}
	return out
}

type ephemeral struct {
	Channel, Thread, User, Text string
}

type openedView struct {
	TriggerID string
	View      struct {
		CallbackID      string      `json:"callback_id"`
		PrivateMetadata string      `json:"private_metadata"`
		Blocks          []fakeBlock `json:"blocks"`
	}
}

type ack struct {
	At      time.Time
	Payload json.RawMessage
}

func newFakeSlack(t testing.TB) *fakeSlack {
	f := &fakeSlack{
		t: t, botToken: "xoxb-1111-2222-SECRETbot", appToken: "xapp-1-A1-3333-SECRETapp",
		team: "T0TEAM", botUser: "UBOT",
		changed: make(chan struct{}), uploads: map[string][]byte{}, shared: map[string][]byte{}, names: map[string]string{},
		limits: map[string][]int{}, failures: map[string]string{}, nextTS: 1_700_000_100,
		sentAt: map[string]time.Time{}, acks: map[string]ack{}, outbox: make(chan []byte, 4096),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/upload/", f.serveUpload)
	mux.HandleFunc("/files-pri/", f.serveShared)
	mux.HandleFunc("/ws", f.serveSocket)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.close)
	return f
}

func (f *fakeSlack) URL() string { return f.srv.URL + "/api/" }

func (f *fakeSlack) close() {
	f.mu.Lock()
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	f.srv.Close()
}

// bump wakes waiters; f.mu must be held.
func (f *fakeSlack) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor waits until cond (called with f.mu held) is true.
func (f *fakeSlack) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		ok, changed := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s; calls: %s", what, f.describeCalls())
		}
	}
}

func (f *fakeSlack) describeCalls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, c := range f.calls {
		fmt.Fprintf(&b, "\n  %s %v", c.Method, clipForm(c.Form))
	}
	return b.String()
}

func clipForm(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if len(v) > 200 {
			v = v[:200] + "…"
		}
		out[k] = v
	}
	return out
}

// limit makes the next calls of method answer 429, each with the given Retry-After.
func (f *fakeSlack) limit(method string, retryAfter ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits[method] = append(f.limits[method], retryAfter...)
}

// failNext makes the next call of method answer {"ok":false,"error":code}.
func (f *fakeSlack) failNext(method, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = code
}

func (f *fakeSlack) name(user, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[user] = name
}

func (f *fakeSlack) ts() string {
	f.nextTS++
	return strconv.FormatInt(f.nextTS, 10) + ".000100"
}

func (f *fakeSlack) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	form := map[string]string{}
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	var body []byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, _ = io.ReadAll(r.Body)
	} else if err := r.ParseForm(); err == nil {
		for k, v := range r.PostForm {
			form[k] = v[0]
		}
	}
	token := form["token"]
	if token == "" {
		token = auth
	}
	delete(form, "token")
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, apiCall{Method: method, Form: form, At: now})
	f.bump()
	reply := func(v map[string]any) {
		v["ok"] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": code})
	}
	want := f.botToken
	if method == "apps.connections.open" {
		want = f.appToken
	}
	if token != want {
		fail("invalid_auth")
		return
	}
	if q := f.limits[method]; len(q) > 0 {
		f.limits[method] = q[1:]
		if q[0] > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(q[0]))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	if code, ok := f.failures[method]; ok {
		delete(f.failures, method)
		fail(code)
		return
	}
	switch method {
	case "auth.test":
		reply(map[string]any{"url": "https://plangate-test.slack.com/", "team": "Test", "user": "plangate", "team_id": f.team, "user_id": f.botUser, "bot_id": "B0BOT"})
	case "apps.connections.open":
		if f.rejectApp {
			fail("invalid_auth")
			return
		}
		reply(map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case "users.info":
		name, ok := f.names[form["user"]]
		if !ok {
			fail("user_not_found")
			return
		}
		reply(map[string]any{"user": map[string]any{"id": form["user"], "name": name, "profile": map[string]any{"display_name": name}}})
	case "chat.postMessage":
		m := &shownMsg{Channel: form["channel"], TS: f.ts(), Thread: form["thread_ts"], Text: form["text"], Blocks: decodeBlocks(f.t, form["blocks"])}
		f.msgs = append(f.msgs, m)
		if f.onPost != nil {
			f.onPost(m.Channel, m.shown(), now)
		}
		reply(map[string]any{"channel": m.Channel, "ts": m.TS, "message": map[string]any{"text": m.Text, "ts": m.TS}})
	case "chat.update":
		m := f.find(form["channel"], form["ts"])
		if m == nil {
			fail("message_not_found")
			return
		}
		m.Edits = append(m.Edits, m.shown())
		m.Text, m.Blocks = form["text"], decodeBlocks(f.t, form["blocks"])
		reply(map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text})
	case "chat.postEphemeral":
		f.ephemerals = append(f.ephemerals, ephemeral{Channel: form["channel"], Thread: form["thread_ts"], User: form["user"], Text: form["text"]})
		reply(map[string]any{"message_ts": f.ts()})
	case "files.getUploadURLExternal":
		f.nextFile++
		id := fmt.Sprintf("F%04d", f.nextFile)
		if form["filename"] == "" || form["length"] == "" || form["length"] == "0" {
			fail("invalid_arguments")
			return
		}
		reply(map[string]any{"upload_url": f.srv.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct{ ID, Title string }
		if err := json.Unmarshal([]byte(form["files"]), &files); err != nil || len(files) != 1 {
			fail("invalid_arguments")
			return
		}
		if _, ok := f.uploads[files[0].ID]; !ok {
			fail("file_not_found")
			return
		}
		m := &shownMsg{Channel: form["channel_id"], TS: f.ts(), Thread: form["thread_ts"], File: files[0].Title, Comment: form["initial_comment"]}
		f.msgs = append(f.msgs, m)
		reply(map[string]any{"files": []map[string]any{{"id": files[0].ID, "title": files[0].Title}}})
	case "views.open":
		var v openedView
		var req struct {
			TriggerID string          `json:"trigger_id"`
			View      json.RawMessage `json:"view"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.TriggerID == "" {
			fail("invalid_arguments")
			return
		}
		v.TriggerID = req.TriggerID
		if err := json.Unmarshal(req.View, &v.View); err != nil {
			fail("invalid_arguments")
			return
		}
		f.views = append(f.views, v)
		reply(map[string]any{"view": map[string]any{"id": fmt.Sprintf("V%03d", len(f.views))}})
	default:
		fail("unknown_method")
	}
}

func (f *fakeSlack) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	if strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != f.botToken {
		http.Error(w, "bad token", http.StatusForbidden)
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, _ := io.ReadAll(file)
	f.mu.Lock()
	f.uploads[id] = data
	f.bump()
	f.mu.Unlock()
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(data)))
}

func decodeBlocks(t testing.TB, raw string) []fakeBlock {
	if raw == "" {
		return nil
	}
	var bs []fakeBlock
	if err := json.Unmarshal([]byte(raw), &bs); err != nil {
		t.Errorf("undecodable blocks %q: %v", raw, err)
	}
	return bs
}
