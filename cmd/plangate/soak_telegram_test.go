package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The platform fakes of TestSoakKill.

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
	sending   int // requests other than getUpdates being handled
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

// settledCount is how many messages the fake has received, once no request other than a
// long poll is being handled: after a replica was killed, what it had sent is counted.
func (f *soakTelegram) settledCount(ctx context.Context) int {
	for {
		f.mu.Lock()
		n, busy := len(f.sent), f.sending > 0
		f.mu.Unlock()
		if !busy || ctx.Err() != nil {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}

// positions lists where the messages containing sub are in the order received.
func (f *soakTelegram) positions(sub string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i, s := range f.sent {
		if strings.Contains(s.text+"\n", sub) {
			out = append(out, i)
		}
	}
	return out
}

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
	f.mu.Lock()
	f.sending++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.sending--
		f.mu.Unlock()
	}()
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
