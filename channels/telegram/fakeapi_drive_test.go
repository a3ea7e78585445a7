package telegram

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf16"
)

// fail makes the next times calls of method (matching match, if set) fail; -1 = always.
func (f *fakeAPI) fail(method string, times, code int, desc string, retry int, match func(map[string]string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails = append(f.fails, failRule{method: method, match: match, times: times, code: code, desc: desc, retry: retry})
}

// push queues an update built from fields and returns its id.
func (f *fakeAPI) push(fields map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUpd++
	id := f.nextUpd
	fields["update_id"] = id
	raw, err := json.Marshal(fields)
	if err != nil {
		f.t.Fatal(err)
	}
	f.queue = append(f.queue, fakeUpdate{id: id, raw: raw})
	f.raws[id] = raw
	f.notifyLocked()
	return id
}

func (f *fakeAPI) servedAt(id int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served[id]
}

func (f *fakeAPI) rawUpdate(id int64) json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.raws[id]
}

// redeliver serves update id again, once, whatever the offset: a duplicate delivery.
func (f *fakeAPI) redeliver(id int64, raw json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, fakeUpdate{id: id, raw: raw, force: true})
	f.notifyLocked()
}

type user struct {
	id   int64
	name string
}

type msgOpt func(f *fakeAPI, chat int64, m map[string]any)

// replyTo makes the message a reply to message id of the same chat.
func replyTo(id int) msgOpt {
	return func(f *fakeAPI, chat int64, m map[string]any) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, x := range f.msgs[chat] {
			if x.ID == id {
				m["reply_to_message"] = f.messageJSON(x)
				return
			}
		}
		m["reply_to_message"] = map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": f.chatJSON(chat)}
	}
}

func inThread(thread int) msgOpt {
	return func(_ *fakeAPI, _ int64, m map[string]any) {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
	}
}

// say queues a text message from u in chat, with the entities a Telegram client would
// attach: a bot_command at the start and every @mention, at UTF-16 offsets.
func (f *fakeAPI) say(chat int64, u user, text string, opts ...msgOpt) int64 {
	f.mu.Lock()
	f.nextMsg++
	msgID := f.nextMsg
	f.mu.Unlock()
	m := map[string]any{
		"message_id": msgID, "date": time.Now().Unix(), "chat": f.chatJSON(chat), "text": text,
		"from": map[string]any{"id": u.id, "is_bot": false, "first_name": u.name, "username": u.name},
	}
	if ents := entities(text); len(ents) > 0 {
		m["entities"] = ents
	}
	for _, o := range opts {
		o(f, chat, m)
	}
	return f.push(map[string]any{"message": m})
}

func entities(text string) []map[string]any {
	var out []map[string]any
	u := utf16.Encode([]rune(text))
	if strings.HasPrefix(text, "/") {
		n := len(u)
		if i := strings.IndexAny(text, " \n"); i >= 0 {
			n = utf16Len(text[:i])
		}
		out = append(out, map[string]any{"type": "bot_command", "offset": 0, "length": n})
	}
	for i := 0; i < len(u); i++ {
		if u[i] == '@' && (i == 0 || u[i-1] == ' ' || u[i-1] == '\n') {
			j := i + 1
			for j < len(u) && (u[j] == '_' || u[j] < 128 && (u[j] >= 'a' && u[j] <= 'z' || u[j] >= 'A' && u[j] <= 'Z' || u[j] >= '0' && u[j] <= '9')) {
				j++
			}
			if j > i+1 {
				out = append(out, map[string]any{"type": "mention", "offset": i, "length": j - i})
			}
		}
	}
	return out
}

// click queues a button click by u on message msgID of chat and returns the query id.
func (f *fakeAPI) click(chat int64, u user, msgID int, data string) string {
	f.mu.Lock()
	var msg map[string]any
	for _, x := range f.msgs[chat] {
		if x.ID == msgID {
			msg = f.messageJSON(x)
		}
	}
	f.mu.Unlock()
	if msg == nil {
		f.t.Fatalf("click on unknown message %d in chat %d", msgID, chat)
	}
	qid := fmt.Sprintf("q%d-%d", msgID, time.Now().UnixNano())
	f.push(map[string]any{"callback_query": map[string]any{
		"id": qid, "chat_instance": "ci", "data": data, "message": msg,
		"from": map[string]any{"id": u.id, "is_bot": false, "first_name": u.name, "username": u.name},
	}})
	return qid
}

// waitFor waits until cond holds over the fake's state, failing the test after 10s.
func (f *fakeAPI) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, changed := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			f.t.Fatalf("timed out waiting for %s; calls: %s", what, f.describeCalls())
		}
	}
}

// Helpers below read state; the caller of waitFor's cond holds f.mu already, so these
// come in locked (…L) and locking variants.

func (f *fakeAPI) messagesL(chat int64) []*shownMsg { return f.msgs[chat] }

func (f *fakeAPI) messages(chat int64) []shownMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []shownMsg
	for _, m := range f.msgs[chat] {
		out = append(out, *m)
	}
	return out
}

func (f *fakeAPI) callsL(method string) []apiCall {
	var out []apiCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) callsOf(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callsL(method)
}

func (f *fakeAPI) answer(qid string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.answers[qid]
	return a, ok
}

func (f *fakeAPI) waitAnswer(qid string) string {
	f.t.Helper()
	f.waitFor("answer to "+qid, func() bool { _, ok := f.answers[qid]; return ok })
	a, _ := f.answer(qid)
	return a
}

// waitText waits for a message in chat whose visible text contains s and returns it.
func (f *fakeAPI) waitText(chat int64, s string) shownMsg {
	f.t.Helper()
	var found shownMsg
	f.waitFor(fmt.Sprintf("a message containing %q in chat %d", s, chat), func() bool {
		for _, m := range f.msgs[chat] {
			if strings.Contains(m.Text, s) {
				found = *m
				return true
			}
		}
		return false
	})
	return found
}

func (f *fakeAPI) describeCalls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, c := range f.calls {
		if c.Method == "getUpdates" {
			continue
		}
		keys := make([]string, 0, len(c.Params))
		for k := range c.Params {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "\n  %s", c.Method)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%.80q", k, c.Params[k])
		}
	}
	return b.String()
}
