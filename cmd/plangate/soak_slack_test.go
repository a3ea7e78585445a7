package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// soakSlack is a Slack fake for TestSoakKill: the Web API methods a DM and its answer
// need, and a Socket Mode websocket that delivers every envelope until it is acknowledged,
// as Slack does: an envelope a killed process never acknowledged comes again on the next
// connection.
type soakSlack struct {
	srv *httptest.Server

	mu     sync.Mutex
	envs   []soakEnvelope
	acked  map[string]bool
	posts  []soakSent // chat: the DM's number
	nextTS int
	gen    int // connections so far, which tell the starts apart
}

type soakEnvelope struct{ id, body string }

func newSoakSlack() *soakSlack {
	f := &soakSlack{acked: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.api)
	mux.HandleFunc("/ws", f.socket)
	f.srv = httptest.NewServer(mux)
	return f
}

func soakDM(dm int) string { return fmt.Sprintf("D0SOAK%d", dm) }

// message queues a DM from the DM's person.
func (f *soakSlack) message(dm int, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.envs) + 1
	ts := fmt.Sprintf("1800000000.%06d", n)
	inner, _ := json.Marshal(map[string]any{"type": "message", "channel_type": "im", "user": fmt.Sprintf("U0SOAK%d", dm),
		"text": text, "ts": ts, "channel": soakDM(dm), "event_ts": ts})
	payload := fmt.Sprintf(`{"token":"v","team_id":"T0SOAK","api_app_id":"A1","type":"event_callback","event_id":"EvSOAK%d","event_time":1800000000,"event":%s}`, n, inner)
	id := fmt.Sprintf("env-soak-%d", n)
	f.envs = append(f.envs, soakEnvelope{id, fmt.Sprintf(`{"type":"events_api","envelope_id":%q,"accepts_response_payload":false,"payload":%s}`, id, payload)})
}

// drained reports whether every envelope was acknowledged.
func (f *soakSlack) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acked) == len(f.envs)
}

// count counts the posts whose text (with a newline added) contains sub.
func (f *soakSlack) count(sub string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.posts {
		if strings.Contains(p.text+"\n", sub) {
			n++
		}
	}
	return n
}

func (f *soakSlack) api(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	reply := func(v map[string]any) {
		v["ok"] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch strings.TrimPrefix(r.URL.Path, "/api/") {
	case "auth.test":
		reply(map[string]any{"url": "https://soak.slack.com/", "team_id": "T0SOAK", "user_id": "UBOT", "bot_id": "B0BOT"})
	case "apps.connections.open":
		reply(map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case "users.info":
		reply(map[string]any{"user": map[string]any{"id": r.PostForm.Get("user"), "name": "p", "profile": map[string]any{"display_name": "P"}}})
	case "chat.postMessage", "chat.update":
		f.mu.Lock()
		f.nextTS++
		ts := fmt.Sprintf("1900000000.%06d", f.nextTS)
		f.posts = append(f.posts, soakSent{text: r.PostForm.Get("text"), gen: f.gen})
		f.mu.Unlock()
		reply(map[string]any{"channel": r.PostForm.Get("channel"), "ts": ts})
	default:
		reply(map[string]any{})
	}
}

// socket sends, on each connection, every envelope not yet acknowledged (new ones as they
// come) and records the acks.
func (f *soakSlack) socket(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	f.mu.Lock()
	f.gen++
	f.mu.Unlock()
	if conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`)) != nil {
		return
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var a struct {
				ID string `json:"envelope_id"`
			}
			if json.Unmarshal(data, &a) == nil && a.ID != "" {
				f.mu.Lock()
				f.acked[a.ID] = true
				f.mu.Unlock()
			}
		}
	}()
	sent := map[string]bool{}
	for {
		f.mu.Lock()
		var out []soakEnvelope
		for _, e := range f.envs {
			if !sent[e.id] && !f.acked[e.id] {
				out = append(out, e)
			}
		}
		f.mu.Unlock()
		for _, e := range out {
			if conn.WriteMessage(websocket.TextMessage, []byte(e.body)) != nil {
				return
			}
			sent[e.id] = true
		}
		select {
		case <-closed:
			return
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
