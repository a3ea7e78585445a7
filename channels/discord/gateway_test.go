package discord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// gatewayState is the fake's gateway: hello (op 10), identify (op 2) -> READY, resume
// (op 6) -> the missed dispatches, then RESUMED; heartbeats (op 1) are acknowledged (op 11).
// Dispatches get increasing sequence numbers and are kept, so a resumed session gets what
// it missed; those sent before the first identify wait for it.
type gatewayState struct {
	mu        sync.Mutex
	conn      *websocket.Conn // the current connection, nil when none
	ready     bool            // conn has identified or resumed
	seq       int64
	log       []gwEvent // every numbered dispatch
	prelude   []gwEvent // dispatches before any session: sent after READY
	session   string
	sessions  int
	resumes   []int64 // the seq each resume named
	intents   int64
	tokens    []string             // identify and resume tokens
	replayDup bool                 // on resume, send the last event the client saw again
	refuse    int                  // close code to answer identify with; 0 = READY
	sentAt    map[string]time.Time // when each event id was written to a connection
	conns     []*websocket.Conn
}

type gwEvent struct {
	t string
	d any
	s int64
}

func (g *gatewayState) init() { g.sentAt = map[string]time.Time{} }

// writeLocked writes a dispatch to the current connection and notes when.
func (g *gatewayState) writeLocked(conn *websocket.Conn, e gwEvent) error {
	if err := conn.WriteJSON(map[string]any{"op": 0, "t": e.t, "s": e.s, "d": e.d}); err != nil {
		return err
	}
	if m, ok := e.d.(map[string]any); ok {
		if id, ok := m["id"].(string); ok {
			if _, seen := g.sentAt[id]; !seen {
				g.sentAt[id] = time.Now()
			}
		}
	}
	return nil
}

// sentTime is when the event with id was first written to the client.
func (f *fakeDiscord) sentTime(id string) time.Time {
	f.gw.mu.Lock()
	defer f.gw.mu.Unlock()
	return f.gw.sentAt[id]
}

var upgrader = websocket.Upgrader{}

func (f *fakeDiscord) serveGateway(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		f.t.Logf("gateway upgrade: %v", err)
		return
	}
	g := &f.gw
	g.mu.Lock()
	g.conns = append(g.conns, conn)
	g.mu.Unlock()
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}}); err != nil {
		return
	}
	for {
		var in struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := conn.ReadJSON(&in); err != nil {
			g.mu.Lock()
			if g.conn == conn {
				g.conn, g.ready = nil, false
			}
			g.mu.Unlock()
			return
		}
		switch in.Op {
		case 1:
			g.mu.Lock()
			err = conn.WriteJSON(map[string]any{"op": 11})
			g.mu.Unlock()
		case 2:
			err = f.identify(conn, in.D)
		case 6:
			err = f.resume(conn, in.D)
		}
		if err != nil {
			return
		}
	}
}

func (f *fakeDiscord) identify(conn *websocket.Conn, raw json.RawMessage) error {
	var id struct {
		Token   string `json:"token"`
		Intents int64  `json:"intents"`
	}
	_ = json.Unmarshal(raw, &id)
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens = append(g.tokens, id.Token)
	g.intents = id.Intents
	if g.refuse != 0 {
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(g.refuse, "refused"))
		return fmt.Errorf("refused")
	}
	g.sessions++
	g.session = fmt.Sprintf("session-%d", g.sessions)
	g.conn, g.ready = conn, true
	g.seq++
	ready := map[string]any{
		"v": 9, "session_id": g.session,
		"user":        map[string]any{"id": f.botID, "username": "plangate", "bot": true},
		"guilds":      []any{},
		"application": map[string]any{"id": f.appID},
	}
	if err := conn.WriteJSON(map[string]any{"op": 0, "t": "READY", "s": g.seq, "d": ready}); err != nil {
		return err
	}
	prelude := g.prelude
	g.prelude = nil
	for _, e := range prelude {
		if err := g.sendLocked(e); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeDiscord) resume(conn *websocket.Conn, raw json.RawMessage) error {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(raw, &rs)
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens = append(g.tokens, rs.Token)
	g.resumes = append(g.resumes, rs.Seq)
	if rs.SessionID != g.session {
		return conn.WriteJSON(map[string]any{"op": 9, "d": false})
	}
	g.conn = conn
	// As Discord does: the missed dispatches in order, then RESUMED.
	for _, e := range g.log {
		if e.s > rs.Seq || (g.replayDup && e.s == rs.Seq) {
			if err := g.writeLocked(conn, e); err != nil {
				return err
			}
		}
	}
	g.seq++
	g.ready = true
	return conn.WriteJSON(map[string]any{"op": 0, "t": "RESUMED", "s": g.seq, "d": map[string]any{}})
}

// sendLocked numbers a dispatch, keeps it and writes it if a session is connected.
func (g *gatewayState) sendLocked(e gwEvent) error {
	g.seq++
	e.s = g.seq
	g.log = append(g.log, e)
	if g.conn == nil || !g.ready {
		return nil
	}
	return g.writeLocked(g.conn, e)
}

// dispatch sends an event: at once when a session is connected, on READY before the first
// identify, on resume when the connection is down.
func (f *fakeDiscord) dispatch(t string, d any) {
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.session == "" {
		g.prelude = append(g.prelude, gwEvent{t: t, d: d})
		return
	}
	if err := g.sendLocked(gwEvent{t: t, d: d}); err != nil {
		f.t.Logf("gateway write: %v", err)
	}
}

// drop closes the gateway connection without a close frame, as a network failure does.
func (f *fakeDiscord) drop() {
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn != nil {
		g.conn.Close()
		g.conn, g.ready = nil, false
	}
}

func (f *fakeDiscord) connected() bool {
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn != nil && g.ready
}

func (g *gatewayState) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
}

func (f *fakeDiscord) gwStats() (sessions int, resumes []int64, intents int64, tokens []string) {
	g := &f.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions, append([]int64(nil), g.resumes...), g.intents, append([]string(nil), g.tokens...)
}

// The dispatch payloads.

type user struct{ id, name string }

func (u user) json() map[string]any {
	return map[string]any{"id": u.id, "username": u.name, "global_name": strings.ToUpper(u.name[:1]) + u.name[1:]}
}

// say dispatches MESSAGE_CREATE from u in channel (a DM when the channel is not a guild
// one); mention adds a leading mention of the bot. It returns the message id.
func (f *fakeDiscord) say(channel string, u user, text string, mention bool, roles ...string) string {
	f.mu.Lock()
	id := f.newIDLocked()
	ch, known := f.channels[channel]
	f.mu.Unlock()
	d := map[string]any{
		"id": id, "channel_id": channel, "author": u.json(), "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "mentions": []any{},
	}
	if mention {
		text = "<@" + f.botID + "> " + text
		d["mentions"] = []any{map[string]any{"id": f.botID, "username": "plangate", "bot": true}}
	}
	d["content"] = text
	if known && ch.Guild != "" {
		d["guild_id"] = ch.Guild
		d["member"] = map[string]any{"roles": roles}
	}
	f.dispatch("MESSAGE_CREATE", d)
	return id
}

// interact dispatches INTERACTION_CREATE of type typ (2 command, 3 component, 5 modal
// submit) with data, from u in channel; msg is the message a component is on. It returns
// the interaction id.
func (f *fakeDiscord) interact(channel string, u user, typ int, data any, msg *shownMsg, roles ...string) string {
	f.mu.Lock()
	id := f.newIDLocked()
	token := "itok-" + id + "-secret"
	ch, known := f.channels[channel]
	f.ixs[token] = &fakeIx{ID: id, Channel: channel, Guild: ch.Guild}
	f.mu.Unlock()
	d := map[string]any{
		"id": id, "application_id": f.appID, "type": typ, "token": token, "version": 1,
		"channel_id": channel, "data": data,
	}
	if known && ch.Guild != "" {
		d["guild_id"] = ch.Guild
		d["member"] = map[string]any{"user": u.json(), "roles": roles}
	} else {
		d["user"] = u.json()
	}
	if msg != nil {
		d["message"] = map[string]any{"id": msg.ID, "channel_id": msg.Channel, "content": msg.Content, "type": 0,
			"timestamp": time.Now().UTC().Format(time.RFC3339)}
	}
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook.send(f, token, d)
		return id
	}
	f.dispatch("INTERACTION_CREATE", d)
	return id
}

// command invokes /plan sub with an optional string option.
func (f *fakeDiscord) command(channel string, u user, sub, option, value string) string {
	s := map[string]any{"name": sub, "type": 1}
	if option != "" {
		s["options"] = []any{map[string]any{"name": option, "type": 3, "value": value}}
	}
	return f.interact(channel, u, 2, map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{s}}, nil)
}

// click presses the button with customID on m.
func (f *fakeDiscord) click(u user, m shownMsg, customID string, roles ...string) string {
	return f.interact(m.Channel, u, 3, map[string]any{"custom_id": customID, "component_type": 2}, &m, roles...)
}

// submit sends the Revise modal with feedback.
func (f *fakeDiscord) submit(channel string, u user, customID, feedback string) string {
	return f.interact(channel, u, 5, map[string]any{"custom_id": customID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "feedback", "value": feedback}}},
	}}, nil)
}

// submitStep sends the Revise modal with feedback and its step field.
func (f *fakeDiscord) submitStep(channel string, u user, customID, feedback, step string) string {
	return f.interact(channel, u, 5, map[string]any{"custom_id": customID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "feedback", "value": feedback}}},
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "step", "value": step}}},
	}}, nil)
}
