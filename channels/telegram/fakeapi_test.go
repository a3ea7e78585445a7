package telegram

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
)

// fakeAPI is a local Bot API: POST /bot{token}/{method} with multipart, urlencoded or JSON
// parameters, {"ok":...} envelopes, a getUpdates that is held open while nothing is
// queued and that forgets updates below the offset, as Telegram does. It validates what a
// real server would refuse (malformed HTML, texts over 4096 or captions over 1024, long
// callback_data) and can be told to fail calls.
type fakeAPI struct {
	t       testing.TB
	srv     *httptest.Server
	token   string
	botID   int64
	botName string
	hold    time.Duration // how long getUpdates waits when nothing is queued

	mu      sync.Mutex
	changed chan struct{}
	queue   []fakeUpdate
	nextUpd int64
	nextMsg int
	calls   []apiCall
	msgs    map[int64][]*shownMsg // by chat, in order sent
	fails   []failRule
	answers map[string]string   // callback query id -> toast
	served  map[int64]time.Time // when each update was first handed out
	raws    map[int64]json.RawMessage
	onSent  func(chat int64, text string, at time.Time) // called for every sendMessage
	files   map[string][]byte                           // file_id -> content, for getFile and downloads
}

type fakeUpdate struct {
	id    int64
	raw   json.RawMessage
	force bool // served even below the offset: a duplicate delivery
}

type apiCall struct {
	Method string
	Params map[string]string
	File   string // name of an uploaded file
	Data   string // its content
}

// shownMsg is a message as the chat shows it.
type shownMsg struct {
	ID      int
	Chat    int64
	Thread  int
	Text    string // visible text (tags removed) or caption
	Raw     string // as sent, with markup
	Doc     string // file name, for documents
	Markup  string // reply_markup JSON
	Edits   int
	Mode    string
	Replied int // reply_to message id
}

// failRule makes calls of method fail while times > 0 (-1 = always) and match returns true.
type failRule struct {
	method string
	match  func(p map[string]string) bool
	times  int
	code   int
	desc   string
	retry  int
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{
		t: t, token: "424242:AAE-fake-token-Zx9", botID: 424242, botName: "PlanGateBot",
		hold: 150 * time.Millisecond, changed: make(chan struct{}), nextUpd: 1000, nextMsg: 1,
		msgs: map[int64][]*shownMsg{}, answers: map[string]string{}, served: map[int64]time.Time{}, raws: map[int64]json.RawMessage{}, files: map[string][]byte{},
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) URL() string { return f.srv.URL }

// notifyLocked wakes waiters; f.mu must be held.
func (f *fakeAPI) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if path, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+f.token+"/"); ok && r.Method == http.MethodGet {
		f.download(w, path)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if r.Method != http.MethodPost || !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
		return
	}
	params, file, data, err := parseParams(r)
	if err != nil {
		writeErr(w, 400, "Bad Request: "+err.Error(), 0)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{Method: method, Params: params, File: file, Data: data})
	f.notifyLocked()
	for i := range f.fails {
		fr := &f.fails[i]
		if fr.method == method && fr.times != 0 && (fr.match == nil || fr.match(params)) {
			if fr.times > 0 {
				fr.times--
			}
			f.mu.Unlock()
			writeErr(w, fr.code, fr.desc, fr.retry)
			return
		}
	}
	f.mu.Unlock()

	switch method {
	case "getMe":
		ok200(w, models.User{ID: f.botID, IsBot: true, FirstName: "PlanGate", Username: f.botName})
	case "setMyCommands", "sendChatAction", "setWebhook", "deleteWebhook":
		ok200(w, true)
	case "getUpdates":
		f.getUpdates(w, r, params)
	case "getFile":
		f.getFile(w, params)
	case "answerCallbackQuery":
		f.mu.Lock()
		f.answers[params["callback_query_id"]] = params["text"]
		f.notifyLocked()
		f.mu.Unlock()
		ok200(w, true)
	case "sendMessage", "sendDocument":
		f.send(w, method, params, file)
	case "editMessageText", "editMessageCaption", "editMessageReplyMarkup":
		f.edit(w, method, params)
	default:
		writeErr(w, 404, "Not Found: method not found", 0)
	}
}

func (f *fakeAPI) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	deadline := time.NewTimer(f.hold)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		var out []json.RawMessage
		keep := f.queue[:0]
		for _, u := range f.queue {
			if u.id < offset && !u.force {
				continue // confirmed by this offset: Telegram forgets it
			}
			out = append(out, u.raw)
			if _, ok := f.served[u.id]; !ok {
				f.served[u.id] = time.Now()
			}
			if !u.force {
				keep = append(keep, u)
			}
		}
		f.queue = keep
		changed := f.changed
		f.mu.Unlock()
		if len(out) > 0 {
			ok200(w, out)
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			ok200(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeAPI) send(w http.ResponseWriter, method string, p map[string]string, file string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		writeErr(w, 400, "Bad Request: chat not found", 0)
		return
	}
	text, limit, what := p["text"], maxText, "message is too long"
	if method == "sendDocument" {
		text, limit, what = p["caption"], maxCaption, "message caption is too long"
		if file == "" {
			writeErr(w, 400, "Bad Request: there is no document in the request", 0)
			return
		}
	} else if strings.TrimSpace(text) == "" {
		writeErr(w, 400, "Bad Request: message text is empty", 0)
		return
	}
	visible, desc := checkText(text, p["parse_mode"])
	if desc != "" {
		writeErr(w, 400, "Bad Request: can't parse entities: "+desc, 0)
		return
	}
	if utf16Len(visible) > limit {
		writeErr(w, 400, "Bad Request: "+what, 0)
		return
	}
	if desc := checkMarkup(p["reply_markup"]); desc != "" {
		writeErr(w, 400, "Bad Request: "+desc, 0)
		return
	}
	thread, _ := strconv.Atoi(p["message_thread_id"])
	f.mu.Lock()
	m := &shownMsg{ID: f.nextMsg, Chat: chat, Thread: thread, Text: visible, Raw: text, Markup: p["reply_markup"], Mode: p["parse_mode"]}
	f.nextMsg++
	if method == "sendDocument" {
		m.Doc = file
	}
	if rp := p["reply_parameters"]; rp != "" {
		var v struct {
			MessageID int `json:"message_id"`
		}
		_ = json.Unmarshal([]byte(rp), &v)
		m.Replied = v.MessageID
	}
	f.msgs[chat] = append(f.msgs[chat], m)
	f.notifyLocked()
	res := f.messageJSON(m)
	onSent := f.onSent
	f.mu.Unlock()
	if onSent != nil && method == "sendMessage" {
		onSent(chat, m.Text, time.Now())
	}
	ok200(w, res)
}

func (f *fakeAPI) edit(w http.ResponseWriter, method string, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	id, _ := strconv.Atoi(p["message_id"])
	f.mu.Lock()
	defer f.mu.Unlock()
	var m *shownMsg
	for _, x := range f.msgs[chat] {
		if x.ID == id {
			m = x
		}
	}
	if m == nil {
		writeErr(w, 400, "Bad Request: message to edit not found", 0)
		return
	}
	text, raw, markup := m.Text, m.Raw, m.Markup
	switch method {
	case "editMessageText", "editMessageCaption":
		raw = p["text"]
		limit := maxText
		if method == "editMessageCaption" {
			raw, limit = p["caption"], maxCaption
		}
		var desc string
		if text, desc = checkText(raw, p["parse_mode"]); desc != "" {
			writeErr(w, 400, "Bad Request: can't parse entities: "+desc, 0)
			return
		}
		if utf16Len(text) > limit {
			writeErr(w, 400, "Bad Request: message is too long", 0)
			return
		}
		markup = p["reply_markup"]
	case "editMessageReplyMarkup":
		markup = p["reply_markup"]
	}
	if normMarkup(markup) == normMarkup(m.Markup) && raw == m.Raw {
		writeErr(w, 400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", 0)
		return
	}
	m.Text, m.Raw, m.Markup = text, raw, markup
	m.Edits++
	f.notifyLocked()
	ok200(w, f.messageJSON(m))
}

func (f *fakeAPI) messageJSON(m *shownMsg) map[string]any {
	res := map[string]any{
		"message_id": m.ID, "date": time.Now().Unix(), "chat": f.chatJSON(m.Chat),
		"from": map[string]any{"id": f.botID, "is_bot": true, "first_name": "PlanGate", "username": f.botName},
	}
	if m.Thread != 0 {
		res["message_thread_id"] = m.Thread
		res["is_topic_message"] = true
	}
	if m.Doc != "" {
		res["document"] = map[string]any{"file_id": "f" + strconv.Itoa(m.ID), "file_unique_id": "u" + strconv.Itoa(m.ID), "file_name": m.Doc}
		res["caption"] = m.Text
	} else {
		res["text"] = m.Text
	}
	return res
}

// Chats: positive ids are private chats, -100... supergroups, -200... forums.
func (f *fakeAPI) chatJSON(id int64) map[string]any {
	switch {
	case id > 0:
		return map[string]any{"id": id, "type": "private", "first_name": "user"}
	case id <= -2000:
		return map[string]any{"id": id, "type": "supergroup", "title": "forum", "is_forum": true}
	}
	return map[string]any{"id": id, "type": "supergroup", "title": "group"}
}

func ok200(w http.ResponseWriter, result any) {
	writeJSON(w, 200, map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, code int, desc string, retry int) {
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retry > 0 {
		body["parameters"] = map[string]any{"retry_after": retry}
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
