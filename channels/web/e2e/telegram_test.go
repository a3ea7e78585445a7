// Package e2e_test runs the web dashboard beside the real Telegram adapter, pointed at a
// small local Bot API, over the real engine and store. It lives apart from package web so
// that web itself never imports another adapter, not even in its tests.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/channels/web"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/httpserver"
	"github.com/plangate/plangate/store"
)

// botAPI is the least of the Bot API the adapter needs: getMe, a getUpdates that hands out
// queued updates (held briefly when there are none), and message calls that are recorded
// and answered with a message.
type botAPI struct {
	mu      sync.Mutex
	updates []json.RawMessage
	calls   []call
	nextMsg int
}

type call struct{ method, chat, text, markup string }

func (f *botAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		_ = r.ParseForm()
	}
	p := func(k string) string { return r.FormValue(k) }
	var result any = true
	switch method {
	case "getMe":
		result = map[string]any{"id": 900, "is_bot": true, "first_name": "plangate", "username": "plangate_bot"}
	case "getUpdates":
		result = f.take(r.Context())
	case "sendMessage", "sendDocument", "editMessageText", "editMessageCaption", "editMessageReplyMarkup":
		text := p("text") + p("caption")
		f.mu.Lock()
		f.calls = append(f.calls, call{method: method, chat: p("chat_id"), text: text, markup: p("reply_markup")})
		f.nextMsg++
		id := f.nextMsg
		f.mu.Unlock()
		if m := p("message_id"); m != "" {
			fmt.Sscan(m, &id)
		}
		result = map[string]any{"message_id": id, "date": 1764547200, "chat": map[string]any{"id": 555, "type": "private"}, "text": text}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func (f *botAPI) take(ctx context.Context) []json.RawMessage {
	for range 20 {
		f.mu.Lock()
		if len(f.updates) > 0 {
			out := f.updates
			f.updates = nil
			f.mu.Unlock()
			return out
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return []json.RawMessage{}
		case <-time.After(10 * time.Millisecond):
		}
	}
	return []json.RawMessage{}
}

func (f *botAPI) said(want string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.chat == "555" && strings.Contains(c.text, want) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestDashboardAcceptsATelegramPlan(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	api := &botAPI{}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	tg, err := telegram.New(ctx, telegram.Config{Token: "900:secret", APIURL: apiSrv.URL, PollTimeout: time.Second}, st, log)
	if err != nil {
		t.Fatal(err)
	}
	approvers := []string{"web:alice", "telegram:42"}
	wch, err := web.New(web.Config{Enabled: true, Users: map[string]string{"alice": "alice-token-0123456789"}},
		web.Deps{Store: st, Approvers: approvers, Log: log, WrongToken: func(context.Context) {}})
	if err != nil {
		t.Fatal(err)
	}
	model := channeltest.NewModel()
	hub := channels.NewHub(log, tg, wch)
	eng := core.NewEngine(core.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"),
		PerSession: true, PlanMode: true, Approvers: approvers}, core.Deps{Store: st, Model: model, Out: hub, Log: log})
	hs := httpserver.New(httpserver.Config{}, nil, log)
	wch.RegisterHTTP(hs)
	srv := httptest.NewServer(hs.Handler())
	defer srv.Close()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- hub.Run(runCtx, eng) }()
	defer func() {
		cancel()
		<-done
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		_ = eng.Wait(wctx)
	}()

	args, _ := json.Marshal(map[string]any{"title": "Rotate the service logs", "plan": []map[string]string{{"step": "Add a logrotate rule"}}})
	model.Push("telegram:900:555", core.ModelResponse{ToolCalls: []core.ToolCall{{ID: "c1", Name: "exit_plan_mode", Args: args}}})
	api.mu.Lock()
	api.updates = append(api.updates, json.RawMessage(`{"update_id":1,"message":{"message_id":1,"date":1764547200,"chat":{"id":555,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Dana"},"text":"/plan on rotate the logs","entities":[{"type":"bot_command","offset":0,"length":5}]}}`))
	api.mu.Unlock()
	waitFor(t, "the plan in the Telegram chat", func() bool { return api.said("Rotate the service logs") })

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(path string) string {
		res, err := browser.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	m := csrfField.FindStringSubmatch(get("/login"))
	if _, err := browser.PostForm(srv.URL+"/login", url.Values{"csrf": {m[1]}, "token": {"alice-token-0123456789"}}); err != nil {
		t.Fatal(err)
	}
	page := get("/dashboard")
	if !strings.Contains(page, "Rotate the service logs") || !strings.Contains(page, "telegram") || !strings.Contains(page, `class="accept"`) {
		t.Fatalf("the dashboard does not offer the Telegram plan: %s", page)
	}
	s, err := st.Session(ctx, "telegram:900:555")
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "session": {s.ID}, "kind": {"accept"}, "approval": {s.ApprovalID}}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/dashboard/actions", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Plangate-Fetch", "1")
	res, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("accepting from the dashboard: %d", res.StatusCode)
	}
	waitFor(t, "the Telegram chat to say it was accepted", func() bool { return api.said(`Accepted plan v1`) })
	waitFor(t, "the session to run the plan", func() bool {
		s, _ := st.Session(ctx, "telegram:900:555")
		return s.Phase != core.PhaseAwaitingApproval
	})
}
