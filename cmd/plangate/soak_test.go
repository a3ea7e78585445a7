package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// TestSoakKill drives a real `plangate serve` against a fake Telegram Bot API and an echo
// model behind the real openai client, across many chats, and kills it with SIGKILL at
// random moments. Then it checks what people would see: every update the process
// confirmed is answered exactly once, every plan is accepted once and announced once, and
// every reminder is delivered once. PLANGATE_SOAK_KILLS sets the number of kills (10 in
// CI; the long form uses 100); the numbers are logged.
func TestSoakKill(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: kills a real process repeatedly; skipped with -short")
	}
	kills := 10
	if v := os.Getenv("PLANGATE_SOAK_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PLANGATE_SOAK_KILLS=%q: want a positive number", v)
		}
		kills = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(60+kills*3)*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(uint64(kills), 7))  // the kill times (this goroutine only)
	pace := rand.New(rand.NewPCG(uint64(kills), 8)) // the pusher's gaps

	tg := newSoakTelegram()
	tgSrv := httptest.NewServer(tg)
	defer tgSrv.Close()
	model := httptest.NewServer(http.HandlerFunc(soakModel))
	defer model.Close()

	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: "${SOAK_KEY}", model: echo, max_retries: 0, timeout: 10s}
plan_mode: {nudges: [2s], nudge_grace: 1h}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
`, model.URL+"/v1", tgSrv.URL)
	if os.Getenv("PLANGATE_SOAK_LOG") != "" {
		cfg += "log: {level: debug}\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() (stop func(sig syscall.Signal) error) {
		cmd := plangateCmd(t, ctx, dir, "serve")
		cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=4242:soak-token", "SOAK_KEY=k")
		logf, _ := os.OpenFile(filepath.Join(dir, "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return func(sig syscall.Signal) error {
			_ = cmd.Process.Signal(sig)
			return cmd.Wait()
		}
	}

	const chats = 12
	// Chats 0..2 each ask for a plan: two of them accept it by button, one lets it wait
	// for its reminder. The others chat.
	var pushed []string // texts of plain messages
	var mu sync.Mutex
	pusherDone := make(chan struct{})
	go func() {
		defer close(pusherDone)
		for c := range chats {
			if c < 3 {
				tg.message(c, fmt.Sprintf("/plan on plan: soak goal %d", c))
			}
		}
		for k := 0; k < 10+kills*2; k++ {
			for c := 3; c < chats; c++ {
				text := fmt.Sprintf("m-%d-%d", c, k)
				mu.Lock()
				pushed = append(pushed, text)
				mu.Unlock()
				tg.message(c, text)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(20+pace.IntN(40)) * time.Millisecond):
			}
		}
	}()

	clicked := map[int]bool{}
	clickPending := func() {
		for c := 0; c < 2; c++ {
			if id := tg.approvalOf(c); id != "" && !clicked[c] {
				clicked[c] = true
				tg.click(c, "a:"+id)
			}
		}
	}
	for i := range kills {
		stop := start()
		select {
		case <-ctx.Done():
			t.Fatalf("timed out during kill %d", i)
		case <-time.After(time.Duration(150+rng.IntN(500)) * time.Millisecond):
		}
		clickPending()
		_ = stop(syscall.SIGKILL)
	}
	<-pusherDone
	// A last run that is not killed: everything must end up answered. It is stopped with
	// SIGTERM, so wait until it polls: a signal before main() is set up would kill it.
	polls := tg.polls()
	stop := start()
	for tg.polls() == polls && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	all := append([]string(nil), pushed...)
	mu.Unlock()
	missing := func() string {
		var why []string
		if !tg.drained() {
			why = append(why, "updates not confirmed")
		}
		var un []string
		for _, m := range all {
			if tg.count("echo: "+m+"\n") == 0 {
				un = append(un, m)
			}
		}
		if len(un) > 0 {
			why = append(why, fmt.Sprintf("%d messages unanswered (%s)", len(un), strings.Join(un[:min(len(un), 8)], " ")))
		}
		if a := tg.count("Accepted plan v1"); a < 2 {
			why = append(why, fmt.Sprintf("%d of 2 plans accepted (approvals seen: %q %q)", a, tg.approvalOf(0), tg.approvalOf(1)))
		}
		if tg.countIn(2, "has waited") < 1 {
			why = append(why, "no reminder yet")
		}
		return strings.Join(why, "; ")
	}
	giveUp, _ := ctx.Deadline()
	giveUp = giveUp.Add(-5 * time.Second) // the context's end kills the process: dump it first
	for {
		clickPending()
		why := missing()
		if why == "" {
			break
		}
		if time.Now().After(giveUp) {
			_ = stop(syscall.SIGQUIT) // a goroutine dump in the log
			logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			if keep := os.Getenv("PLANGATE_SOAK_LOG"); keep != "" {
				_ = os.WriteFile(keep, logs, 0o644)
			}
			if len(logs) > 4000 {
				logs = logs[len(logs)-4000:]
			}
			t.Fatalf("timed out after the soak: %s\nlast log lines:\n%s", why, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := stop(syscall.SIGTERM); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		if len(logs) > 3000 {
			logs = logs[len(logs)-3000:]
		}
		t.Errorf("the last serve did not stop cleanly: %v\n%s", err, logs)
	}

	if keep := os.Getenv("PLANGATE_SOAK_LOG"); keep != "" {
		logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		_ = os.WriteFile(keep, logs, 0o644)
	}
	var lost, twice []string
	for _, m := range all {
		switch n := tg.count("echo: " + m + "\n"); {
		case n == 0:
			lost = append(lost, m)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s×%d%v", m, n, tg.gens("echo: "+m+"\n")))
		}
	}
	accepted := tg.count("Accepted plan v1")
	reminders := tg.countIn(2, "has waited")
	t.Logf("soak: kills %d, messages pushed %d, answered %d, twice %d, lost %d, decisions announced %d (want 2), reminders %d (want 1)",
		kills, len(all), len(all)-len(lost), len(twice), len(lost), accepted, reminders)
	if len(lost) > 0 {
		t.Errorf("%d confirmed messages were never answered: %v", len(lost), lost)
	}
	// Delivery is at least once: a kill after the platform took a reply and before its
	// outbox row was marked sent sends it again at the next start (no platform lets a
	// sender de-duplicate). PLANGATE_SOAK_STRICT=1 fails on any such duplicate; by default
	// one is tolerated per kill, the most that window can produce.
	if len(twice) > 0 && (os.Getenv("PLANGATE_SOAK_STRICT") == "1" || len(twice) > kills) {
		t.Errorf("%d messages were answered more than once: %v", len(twice), twice)
	}
	if accepted < 2 || accepted > 2+kills {
		t.Errorf(`"Accepted plan v1" announced %d times for 2 accepted plans`, accepted)
	}
	if reminders < 1 {
		t.Errorf("the waiting plan's reminder was never delivered")
	}
	soakCheckStore(t, ctx, dir)
	for c := 0; c < 2; c++ {
		s := soakSession(t, ctx, dir, c)
		if s.Plan == nil || s.Plan.Version != 1 || (s.Plan.Status != "accepted" && s.Plan.Status != "completed") {
			t.Errorf("chat %d: plan after the soak: %+v", c, s.Plan)
		}
	}
}

func soakSession(t *testing.T, ctx context.Context, dir string, chat int) sessionJSON {
	t.Helper()
	cmd := plangateCmd(t, ctx, dir, "sessions", "show", fmt.Sprintf("telegram:4242:%d", soakChatID(chat)), "--json")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=4242:soak-token", "SOAK_KEY=k")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sessions show: %v %s", err, out)
	}
	var s sessionJSON
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	return s
}

func soakChatID(c int) int64 { return 5000 + int64(c) }

// soakModel is an OpenAI-compatible endpoint: a goal starting with "plan:" gets a
// one-step plan (exit_plan_mode), a decision gets a short text, anything else is echoed.
func soakModel(w http.ResponseWriter, r *http.Request) { echoModel(false)(w, r) }

// echoModel is soakModel; with all, a turn echoes every person's message since the
// agent's last answer, one line each, as a model answering the whole conversation would
// (a turn that another replica's messages join sees them all).
func echoModel(all bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { echoTurn(w, r, all) }
}

func echoTurn(w http.ResponseWriter, r *http.Request, all bool) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last, lastRole, echo := "", "", ""
	for _, m := range req.Messages {
		if s, ok := m.Content.(string); ok && m.Role != "system" {
			last, lastRole = s, m.Role
			switch {
			case m.Role != "user":
				echo = ""
			case all:
				echo += "echo: " + s + "\n"
			}
		}
	}
	switch {
	case !all:
		echo = "echo: " + last + "\n"
	case echo == "":
		echo = "Nothing new." // a resumed turn with every message answered
	}
	w.Header().Set("Content-Type", "application/json")
	msg := map[string]any{"role": "assistant", "content": echo}
	finish := "stop"
	switch {
	case lastRole == "user" && strings.Contains(last, "plan: soak goal"):
		args, _ := json.Marshal(map[string]any{"title": "Soak plan", "summary": "One step.",
			"plan": []map[string]any{{"step": "Say hello"}}, "scope": map[string]any{"allowed_paths": []string{"NOTES.md"}}})
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "exit_plan_mode", "arguments": string(args)}}}}
		finish = "tool_calls"
	case lastRole == "tool":
		msg["content"] = "Waiting for the decision."
	case strings.Contains(last, "[PLAN_"):
		msg["content"] = "Noted."
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": "echo",
		"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": msg}}})
}

// soakTelegram is a Bot API fake that keeps every update until the client confirms it by
// asking for a higher offset, as Telegram does, and records every message it was asked to
// send.
type soakTelegram struct {
	mu        sync.Mutex
	updates   []soakUpdate
	nextID    int
	confirmed int // updates with id < confirmed were confirmed
	sent      []soakSent
	msgID     int
	gen       int
	approvals map[int64]string // chat → approval id of the last plan posted
	pollCount int
}

type soakUpdate struct {
	id   int
	body string
}

type soakSent struct {
	chat int64
	text string
	gen  int // which start of plangate sent it (counted by getMe)
}

var soakCallback = regexp.MustCompile(`"callback_data":"a:([a-z0-9]+)"`)

func newSoakTelegram() *soakTelegram {
	return &soakTelegram{nextID: 1, confirmed: 1, approvals: map[int64]string{}}
}

func (f *soakTelegram) push(body func(id int) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextID
	f.nextID++
	f.updates = append(f.updates, soakUpdate{id, body(id)})
}

func (f *soakTelegram) message(chat int, text string) {
	f.push(func(id int) string { return soakMessage(id, chat, text) })
}

func (f *soakTelegram) click(chat int, data string) {
	f.push(func(id int) string { return soakClick(id, chat, data) })
}

// soakMessage is update id: a person's text in a private chat.
func soakMessage(id, chat int, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764500000,"chat":{"id":%d,"type":"private"},"from":{"id":%d,"is_bot":false,"first_name":"P%d"},"text":%q}}`,
		id, id, soakChatID(chat), 9000+chat, chat, text)
}

// soakClick is update id: a button press.
func soakClick(id, chat int, data string) string {
	return fmt.Sprintf(`{"update_id":%d,"callback_query":{"id":"cb%d","from":{"id":%d,"is_bot":false,"first_name":"P%d"},"chat_instance":"x","data":%q,"message":{"message_id":1,"date":1764500000,"chat":{"id":%d,"type":"private"}}}}`,
		id, id, 9000+chat, chat, data, soakChatID(chat))
}

func (f *soakTelegram) approvalOf(chat int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.approvals[soakChatID(chat)]
}

// drained reports whether every update was confirmed.
func (f *soakTelegram) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed >= f.nextID
}

// gens lists which starts sent a text, for the report of a duplicate.
func (f *soakTelegram) gens(sub string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, s := range f.sent {
		if strings.Contains(s.text+"\n", sub) {
			out = append(out, s.gen)
		}
	}
	return out
}

func (f *soakTelegram) count(sub string) int { return f.countIn(-1, sub) }

func (f *soakTelegram) countIn(chat int, sub string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.sent {
		if (chat < 0 || s.chat == soakChatID(chat)) && strings.Contains(s.text+"\n", sub) {
			n++
		}
	}
	return n
}

func (f *soakTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	if method == "getUpdates" {
		var q struct {
			Offset int `json:"offset"`
		}
		_ = json.NewDecoder(r.Body).Decode(&q) // plangate polls with a JSON body
		f.getUpdates(w, r, q.Offset)
		return
	}
	_ = r.ParseMultipartForm(8 << 20)
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getMe":
		f.mu.Lock()
		f.gen++
		f.mu.Unlock()
		io.WriteString(w, `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"Soak","username":"SoakBot"}}`)
		return
	}
	chat, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
	text := r.FormValue("text") + r.FormValue("caption")
	f.mu.Lock()
	f.msgID++
	id := f.msgID
	switch method {
	case "sendMessage", "sendDocument":
		f.sent = append(f.sent, soakSent{chat, text, f.gen})
		if m := soakCallback.FindStringSubmatch(r.FormValue("reply_markup")); m != nil {
			f.approvals[chat] = m[1]
		}
	}
	f.mu.Unlock()
	switch method {
	case "sendMessage", "sendDocument", "editMessageText", "editMessageCaption", "editMessageReplyMarkup":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764500000,"chat":{"id":%d,"type":"private"},"text":"x"}}`, id, chat)
	default:
		io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

func (f *soakTelegram) polls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pollCount
}

func (f *soakTelegram) getUpdates(w http.ResponseWriter, r *http.Request, offset int) {
	f.mu.Lock()
	f.pollCount++
	f.mu.Unlock()
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		f.mu.Lock()
		if offset > f.confirmed {
			f.confirmed = offset
		}
		var out []string
		for _, u := range f.updates {
			if u.id >= f.confirmed && len(out) < 100 {
				out = append(out, u.body)
			}
		}
		f.mu.Unlock()
		if len(out) > 0 || time.Now().After(deadline) || r.Context().Err() != nil {
			io.WriteString(w, `{"ok":true,"result":[`+strings.Join(out, ",")+`]}`)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// soakCheckStore: decisions and reminders happen once in the store, whatever the
// deliveries did.
func soakCheckStore(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	st, err := store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkDecisionsOnce(t, ctx, st)
}

// checkDecisionsOnce: chats 0 and 1 have one accepted audit row each, chat 2 none, and
// the reminder of chat 2 fired once.
func checkDecisionsOnce(t *testing.T, ctx context.Context, st *store.Store) {
	t.Helper()
	for c := range 3 {
		evs, err := st.Events(ctx, fmt.Sprintf("telegram:4242:%d", soakChatID(c)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Kind == core.EventAccepted {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c < 2]; n != want {
			t.Errorf("chat %d: %d accepted audit rows, want %d", c, n, want)
		}
	}
	ns, err := st.Nudges(ctx, fmt.Sprintf("telegram:4242:%d", soakChatID(2)))
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	for _, n := range ns {
		fired += n.Fired
	}
	if fired != 1 {
		t.Errorf("the waiting plan's reminder fired %d times in the store, want once", fired)
	}
}
