package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// serveSocket is the Socket Mode websocket: hello, then the queued envelopes, while the
// acknowledgements are read and recorded. Slack pings; the client reconnects without. As
// at Slack, an envelope not acknowledged when its connection ends is delivered again on
// the next one.
func (f *fakeSlack) serveSocket(w http.ResponseWriter, r *http.Request) {
	// The client announces Origin https://api.slack.com, as it must for Slack.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, conn)
	f.mu.Unlock()
	unacked := map[string][]byte{} // sent on this connection, guarded by f.mu
	done := make(chan struct{})
	var writer sync.WaitGroup
	defer func() {
		conn.Close()
		close(done)
		writer.Wait()
		f.mu.Lock()
		var again [][]byte
		for id, env := range unacked {
			if _, ok := f.acks[id]; !ok {
				again = append(again, env)
			}
		}
		f.mu.Unlock()
		for _, env := range again {
			f.outbox <- env
		}
	}()
	writer.Go(func() {
		if conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1,"connection_info":{"app_id":"A1"}}`)) != nil {
			return
		}
		ping := time.NewTicker(20 * time.Millisecond)
		defer ping.Stop()
		for {
			select {
			case <-done:
				return
			case <-ping.C:
				_ = conn.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second))
			case env := <-f.outbox:
				var head struct {
					ID string `json:"envelope_id"`
				}
				_ = json.Unmarshal(env, &head)
				f.mu.Lock()
				f.sentAt[head.ID] = time.Now()
				if head.ID != "" {
					unacked[head.ID] = env
				}
				f.mu.Unlock()
				if conn.WriteMessage(websocket.TextMessage, env) != nil {
					return // delivered again on the next connection
				}
			}
		}
	})
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		now := time.Now()
		var a struct {
			ID      string          `json:"envelope_id"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &a) != nil || a.ID == "" {
			continue
		}
		f.mu.Lock()
		f.acks[a.ID] = ack{At: now, Payload: a.Payload}
		delete(unacked, a.ID)
		f.bump()
		f.mu.Unlock()
	}
}

// envelope queues one Socket Mode envelope and returns its id.
func (f *fakeSlack) envelope(kind string, payload any, retry int) string {
	f.mu.Lock()
	f.nextFile++ // a shared counter keeps envelope ids unique
	id := fmt.Sprintf("env-%d", f.nextFile)
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook.send(f, id, kind, payload, retry)
		return id
	}
	env := map[string]any{"type": kind, "envelope_id": id, "payload": payload, "accepts_response_payload": kind != "events_api"}
	if retry > 0 {
		env["retry_attempt"] = retry
		env["retry_reason"] = "timeout"
	}
	data, err := json.Marshal(env)
	if err != nil {
		f.t.Fatal(err)
	}
	f.outbox <- data
	return id
}

// waitAck waits for the acknowledgement of envelope id.
func (f *fakeSlack) waitAck(id string) ack {
	f.t.Helper()
	var a ack
	f.waitFor("the ack of "+id, func() bool {
		var ok bool
		a, ok = f.acks[id]
		return ok
	})
	return a
}

// ackLatency is how long envelope id waited for its ack; false if it has none yet.
func (f *fakeSlack) ackLatency(id string) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.acks[id]
	if !ok {
		return 0, false
	}
	return a.At.Sub(f.sentAt[id]), true
}

// userTS makes a ts for a person's message.
func (f *fakeSlack) userTS() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ts()
}

// said is a person's message, sent as an event.
type said struct {
	EventID  string
	Envelope string
	TS       string
}

// eventCallback wraps an inner event; eventID "" picks a fresh one.
func (f *fakeSlack) eventCallback(eventID string, inner map[string]any) map[string]any {
	return map[string]any{
		"token": "verification", "team_id": f.team, "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": inner,
	}
}

// mention makes user mention the bot in ch with text, in thread ("" = top level).
func (f *fakeSlack) mention(ch, user, text, thread string) said {
	return f.mentionTS(f.userTS(), ch, user, text, thread)
}

// mentionTS is mention with the message's ts chosen by the test (from userTS), so the
// test knows the session's thread before the message is sent.
func (f *fakeSlack) mentionTS(ts, ch, user, text, thread string) said {
	inner := map[string]any{
		"type": "app_mention", "user": user, "text": "<@" + f.botUser + "> " + text,
		"ts": ts, "channel": ch, "event_ts": ts,
	}
	if thread != "" {
		inner["thread_ts"] = thread
	}
	id := "Ev" + ts
	return said{EventID: id, TS: ts, Envelope: f.envelope("events_api", f.eventCallback(id, inner), 0)}
}

// dm makes user write text to the bot in direct message channel ch.
func (f *fakeSlack) dm(ch, user, text, thread string) said {
	ts := f.userTS()
	inner := map[string]any{
		"type": "message", "channel_type": "im", "user": user, "text": text,
		"ts": ts, "channel": ch, "event_ts": ts,
	}
	if thread != "" {
		inner["thread_ts"] = thread
	}
	id := "Ev" + ts
	return said{EventID: id, TS: ts, Envelope: f.envelope("events_api", f.eventCallback(id, inner), 0)}
}

// slash makes user run /plan text in ch; thread is the thread_ts Slack includes when the
// command is typed in a thread ("" = not included).
func (f *fakeSlack) slash(ch, user, text, thread string) string {
	p := map[string]any{
		"token": "verification", "team_id": f.team, "team_domain": "test", "channel_id": ch,
		"channel_name": "general", "user_id": user, "user_name": user + "-handle",
		"command": "/plan", "text": text, "api_app_id": "A1",
		"trigger_id": "trig-slash-" + f.userTS(), "response_url": f.srv.URL + "/response",
	}
	if thread != "" {
		p["thread_ts"] = thread
	}
	return f.envelope("slash_commands", p, 0)
}

// click makes user click the button action=value of message m, and returns the envelope
// id and the trigger id (the message id the engine sees).
func (f *fakeSlack) click(m shownMsg, user, action, value string) (env, trigger string) {
	ts := f.userTS()
	trigger = "trig-" + ts
	p := map[string]any{
		"type": "block_actions", "team": map[string]any{"id": f.team, "domain": "test"},
		"user":       map[string]any{"id": user, "username": user + "-handle", "name": user + "-handle", "team_id": f.team},
		"api_app_id": "A1", "token": "verification", "trigger_id": trigger,
		"container": map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false, "thread_ts": m.Thread},
		"channel":   map[string]any{"id": m.Channel, "name": "general"},
		"message":   map[string]any{"type": "message", "ts": m.TS, "thread_ts": m.Thread, "text": m.Text, "user": f.botUser},
		"actions": []map[string]any{{
			"type": "button", "action_id": action, "block_id": decideBlock, "value": value, "action_ts": ts,
			"text": map[string]any{"type": "plain_text", "text": "x"},
		}},
	}
	return f.envelope("interactive", p, 0), trigger
}

// submit makes user submit modal v with feedback, and returns the envelope id.
func (f *fakeSlack) submit(v openedView, user, feedback string) string {
	return f.submitStep(v, user, feedback, "")
}

// submitStep is submit with the option value step picked in the step selector ("" none).
func (f *fakeSlack) submitStep(v openedView, user, feedback, step string) string {
	ts := f.userTS()
	values := map[string]any{feedbackBlock: map[string]any{feedbackAction: map[string]any{"type": "plain_text_input", "value": feedback}}}
	if step != "" {
		values[stepBlock] = map[string]any{stepAction: map[string]any{"type": "static_select", "selected_option": map[string]any{
			"value": step, "text": map[string]any{"type": "plain_text", "text": step}}}}
	}
	p := map[string]any{
		"type": "view_submission", "team": map[string]any{"id": f.team},
		"user":       map[string]any{"id": user, "username": user + "-handle", "name": user + "-handle"},
		"api_app_id": "A1", "token": "verification", "trigger_id": "trig-view-" + ts,
		"view": map[string]any{
			"id": "V" + strconv.Itoa(len(ts)), "type": "modal", "callback_id": v.View.CallbackID,
			"private_metadata": v.View.PrivateMetadata, "hash": "h" + ts,
			"state": map[string]any{"values": values},
		},
	}
	return f.envelope("interactive", p, 0)
}

// resend queues an event envelope again, as Slack's retry of it.
func (f *fakeSlack) resend(eventID string, inner map[string]any, attempt int) string {
	return f.envelope("events_api", f.eventCallback(eventID, inner), attempt)
}
