package discord

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
)

// fakeDiscord is a local Discord: the REST API under /api/v9 (reached through the adapter's
// rewriting transport) and a gateway websocket at /gw (gateway_test.go). It keeps what each
// channel shows, validates what the real API refuses (content over 2000 characters, a
// custom_id over 100, an empty message) and can be told to fail requests.
type fakeDiscord struct {
	t     testing.TB
	srv   *httptest.Server
	token string
	botID string
	appID string

	mu        sync.Mutex
	changed   chan struct{}
	nextID    int64
	channels  map[string]fakeChan
	msgs      []*shownMsg
	calls     []apiCall
	callbacks []callback
	ixs       map[string]*fakeIx // by interaction token
	commands  map[string]json.RawMessage
	fails     []failRule
	onMessage func(m shownMsg, at time.Time) // every created message
	onAck     func(interactionID string, at time.Time)
	onAnswer  func(interactionID string, at time.Time) // every edit of an interaction's answer

	gw gatewayState

	hook *ixSender // when set, interactions go to the interactions endpoint instead

	attachments map[string][]byte // CDN path -> content of a file a person attached
}

type fakeChan struct {
	ID, Guild, Parent string
	Type              int // 0 text, 1 DM, 11 public thread
}

type apiCall struct {
	Method, Path string
	Payload      string // JSON body or payload_json
}

// shownMsg is a message as Discord shows it.
type shownMsg struct {
	ID, Channel     string
	Content         string
	Components      json.RawMessage
	AllowedMentions json.RawMessage
	Files           []fakeFile
	Flags           int
	Edits           int
	Webhook         bool   // an interaction's answer or follow-up
	Interaction     string // its interaction id
	Deleted         bool
}

type fakeFile struct{ Name, Data string }

type callback struct {
	Interaction string
	Type        int
	Data        json.RawMessage
	At          time.Time
}

type fakeIx struct {
	ID, Channel, Guild string
	Original           *shownMsg
}

// failRule makes requests whose "METHOD path" matches fail with status, times times (-1 =
// always). A 429 carries retry_after.
type failRule struct {
	match  *regexp.Regexp
	times  int
	status int
}

func newFakeDiscord(t testing.TB) *fakeDiscord {
	f := &fakeDiscord{
		t: t, token: "test-token.abc.DEF_secret", botID: "900", appID: "900",
		changed: make(chan struct{}), nextID: 1 << 32,
		channels: map[string]fakeChan{
			"C1": {ID: "C1", Guild: "G1", Type: 0},
			"C2": {ID: "C2", Guild: "G1", Type: 0},
			"T1": {ID: "T1", Guild: "G1", Parent: "C1", Type: 11},
		},
		ixs: map[string]*fakeIx{}, commands: map[string]json.RawMessage{}, attachments: map[string][]byte{},
	}
	f.gw.init()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v9/", f.serveAPI)
	mux.HandleFunc("/gw", f.serveGateway)
	mux.HandleFunc("/gw/", f.serveGateway) // discordgo adds a slash to the URL it is given
	mux.HandleFunc("/attachments/", f.serveAttachment)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.close)
	return f
}

func (f *fakeDiscord) URL() string { return f.srv.URL }

func (f *fakeDiscord) close() {
	f.gw.closeAll()
	f.srv.Close()
}

// notifyLocked wakes waiters; f.mu is held.
func (f *fakeDiscord) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeDiscord) newIDLocked() string {
	f.nextID++
	return strconv.FormatInt(f.nextID<<22, 10)
}

func (f *fakeDiscord) fail(pattern string, times, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails = append(f.fails, failRule{match: regexp.MustCompile(pattern), times: times, status: status})
}

var (
	reChannel     = regexp.MustCompile(`^/api/v9/channels/([^/]+)$`)
	reMessages    = regexp.MustCompile(`^/api/v9/channels/([^/]+)/messages$`)
	reMessage     = regexp.MustCompile(`^/api/v9/channels/([^/]+)/messages/([^/]+)$`)
	reTyping      = regexp.MustCompile(`^/api/v9/channels/([^/]+)/typing$`)
	reCallback    = regexp.MustCompile(`^/api/v9/interactions/([^/]+)/([^/]+)/callback$`)
	reOriginal    = regexp.MustCompile(`^/api/v9/webhooks/([^/]+)/([^/]+)/messages/@original$`)
	reFollowup    = regexp.MustCompile(`^/api/v9/webhooks/([^/]+)/([^/]+)$`)
	reCommands    = regexp.MustCompile(`^/api/v9/applications/([^/]+)/commands$`)
	reGuildCmds   = regexp.MustCompile(`^/api/v9/applications/([^/]+)/guilds/([^/]+)/commands$`)
	discordLimits = struct{ content, customID int }{2000, 100}
)

func (f *fakeDiscord) serveAPI(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	webhook := strings.HasPrefix(path, "/api/v9/interactions/") || strings.HasPrefix(path, "/api/v9/webhooks/")
	if !webhook && r.Header.Get("Authorization") != "Bot "+f.token {
		apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	payload, files, err := readBody(r)
	if err != nil {
		apiErr(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, apiCall{Method: r.Method, Path: path, Payload: payload})
	f.notifyLocked()
	key := r.Method + " " + path
	for i := range f.fails {
		fr := &f.fails[i]
		if fr.times != 0 && fr.match.MatchString(key) {
			if fr.times > 0 {
				fr.times--
			}
			if fr.status == http.StatusTooManyRequests {
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset-After", "0.02")
				w.Header().Set("Retry-After", "0")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"message":"You are being rate limited.","retry_after":0.02,"global":false}`)
				return
			}
			apiErr(w, fr.status, 0, "injected failure")
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && path == "/api/v9/users/@me":
		writeJSON(w, map[string]any{"id": f.botID, "username": "plangate", "bot": true})
	case r.Method == http.MethodGet && path == "/api/v9/gateway":
		writeJSON(w, map[string]string{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gw"})
	case r.Method == http.MethodGet && reChannel.MatchString(path):
		id := reChannel.FindStringSubmatch(path)[1]
		ch, ok := f.channels[id]
		if !ok {
			apiErr(w, http.StatusNotFound, 10003, "Unknown Channel")
			return
		}
		writeJSON(w, map[string]any{"id": ch.ID, "guild_id": ch.Guild, "parent_id": ch.Parent, "type": ch.Type})
	case r.Method == http.MethodPost && reMessages.MatchString(path):
		m, status, msg := f.messageFromPayload(reMessages.FindStringSubmatch(path)[1], payload, files)
		if status != 0 {
			apiErr(w, status, 50035, msg)
			return
		}
		f.addMessageLocked(m)
		writeJSON(w, f.messageJSON(m))
	case r.Method == http.MethodPatch && reMessage.MatchString(path):
		sm := reMessage.FindStringSubmatch(path)
		m := f.findLocked(sm[1], sm[2])
		if m == nil {
			apiErr(w, http.StatusNotFound, 10008, "Unknown Message")
			return
		}
		if msg := f.applyEdit(m, payload); msg != "" {
			apiErr(w, http.StatusBadRequest, 50035, msg)
			return
		}
		writeJSON(w, f.messageJSON(m))
	case r.Method == http.MethodPost && reTyping.MatchString(path):
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && reCallback.MatchString(path):
		f.serveCallback(w, reCallback.FindStringSubmatch(path), payload)
	case reOriginal.MatchString(path):
		f.serveOriginal(w, r.Method, reOriginal.FindStringSubmatch(path)[2], payload)
	case r.Method == http.MethodPost && reFollowup.MatchString(path):
		ix := f.ixs[reFollowup.FindStringSubmatch(path)[2]]
		if ix == nil {
			apiErr(w, http.StatusNotFound, 10015, "Unknown Webhook")
			return
		}
		m, status, msg := f.messageFromPayload(ix.Channel, payload, files)
		if status != 0 {
			apiErr(w, status, 50035, msg)
			return
		}
		m.Webhook, m.Interaction = true, ix.ID
		f.addMessageLocked(m)
		writeJSON(w, f.messageJSON(m))
	case r.Method == http.MethodPut && (reCommands.MatchString(path) || reGuildCmds.MatchString(path)):
		guild := ""
		if sm := reGuildCmds.FindStringSubmatch(path); sm != nil {
			guild = sm[2]
		}
		f.commands[guild] = json.RawMessage(payload)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, payload)
	default:
		apiErr(w, http.StatusNotFound, 0, "404: Not Found "+key)
	}
}

func (f *fakeDiscord) serveCallback(w http.ResponseWriter, sm []string, payload string) {
	id, token := sm[1], sm[2]
	ix := f.ixs[token]
	if ix == nil || ix.ID != id {
		apiErr(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	}
	for _, cb := range f.callbacks {
		if cb.Interaction == id {
			apiErr(w, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
			return
		}
	}
	if status, msg := f.recordCallbackLocked(ix, payload); status != 0 {
		apiErr(w, status, 50035, msg)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// recordCallbackLocked keeps the answer to interaction ix, whether it came as a callback
// request or as the response to an interactions endpoint request; f.mu must be held.
func (f *fakeDiscord) recordCallbackLocked(ix *fakeIx, payload string) (int, string) {
	id := ix.ID
	var body struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal([]byte(payload), &body)
	now := time.Now()
	f.callbacks = append(f.callbacks, callback{Interaction: id, Type: body.Type, Data: body.Data, At: now})
	if body.Type == 4 { // a message answers the interaction
		m, status, msg := f.messageFromPayload(ix.Channel, string(body.Data), nil)
		if status != 0 {
			return status, msg
		}
		m.Webhook, m.Interaction = true, id
		f.addMessageLocked(m)
		ix.Original = m
	}
	if body.Type == 5 { // "thinking…", edited later
		m := &shownMsg{Channel: ix.Channel, Webhook: true, Interaction: id, Content: "(thinking)"}
		f.addMessageLocked(m)
		ix.Original = m
	}
	if f.onAck != nil {
		f.onAck(id, now)
	}
	f.notifyLocked()
	return 0, ""
}

func (f *fakeDiscord) serveOriginal(w http.ResponseWriter, method, token, payload string) {
	ix := f.ixs[token]
	if ix == nil || ix.Original == nil {
		apiErr(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	switch method {
	case http.MethodPatch:
		if msg := f.applyEdit(ix.Original, payload); msg != "" {
			apiErr(w, http.StatusBadRequest, 50035, msg)
			return
		}
		if f.onAnswer != nil {
			f.onAnswer(ix.ID, time.Now())
		}
		writeJSON(w, f.messageJSON(ix.Original))
	case http.MethodDelete:
		ix.Original.Deleted = true
		f.notifyLocked()
		w.WriteHeader(http.StatusNoContent)
	default:
		apiErr(w, http.StatusMethodNotAllowed, 0, "405")
	}
}

// outMessage is what the adapter sends for a message, as JSON.
type outMessage struct {
	Content         *string         `json:"content"`
	Components      json.RawMessage `json:"components"`
	AllowedMentions json.RawMessage `json:"allowed_mentions"`
	Flags           int             `json:"flags"`
}

func (f *fakeDiscord) messageFromPayload(channel, payload string, files []fakeFile) (*shownMsg, int, string) {
	var om outMessage
	if err := json.Unmarshal([]byte(payload), &om); err != nil {
		return nil, http.StatusBadRequest, "invalid JSON"
	}
	m := &shownMsg{Channel: channel, Components: om.Components, AllowedMentions: om.AllowedMentions, Files: files, Flags: om.Flags}
	if om.Content != nil {
		m.Content = *om.Content
	}
	if msg := validate(m); msg != "" {
		return nil, http.StatusBadRequest, msg
	}
	if m.Content == "" && len(files) == 0 && len(customIDs(m.Components)) == 0 {
		return nil, http.StatusBadRequest, "Cannot send an empty message"
	}
	return m, 0, ""
}

func (f *fakeDiscord) applyEdit(m *shownMsg, payload string) string {
	var om outMessage
	if err := json.Unmarshal([]byte(payload), &om); err != nil {
		return "invalid JSON"
	}
	next := *m
	if om.Content != nil {
		next.Content = *om.Content
	}
	if om.Components != nil {
		next.Components = om.Components
	}
	next.AllowedMentions = om.AllowedMentions
	if msg := validate(&next); msg != "" {
		return msg
	}
	next.Edits++
	*m = next
	f.notifyLocked()
	return ""
}

func validate(m *shownMsg) string {
	if n := channels.UTF16Len(m.Content); n > discordLimits.content {
		return fmt.Sprintf("content: Must be %d or fewer in length (%d).", discordLimits.content, n)
	}
	for _, id := range customIDs(m.Components) {
		if len(id) > discordLimits.customID {
			return "custom_id: Must be 100 or fewer in length."
		}
	}
	return ""
}

func (f *fakeDiscord) addMessageLocked(m *shownMsg) {
	m.ID = f.newIDLocked()
	f.msgs = append(f.msgs, m)
	if f.onMessage != nil {
		f.onMessage(*m, time.Now())
	}
	f.notifyLocked()
}

func (f *fakeDiscord) findLocked(channel, id string) *shownMsg {
	for _, m := range f.msgs {
		if m.ID == id && m.Channel == channel {
			return m
		}
	}
	return nil
}

func (f *fakeDiscord) messageJSON(m *shownMsg) map[string]any {
	return map[string]any{
		"id": m.ID, "channel_id": m.Channel, "content": m.Content, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339),
		"author":    map[string]any{"id": f.botID, "username": "plangate", "bot": true},
	}
}

// readBody returns the JSON payload of a request (a JSON body, or payload_json of a
// multipart one) and the uploaded files.
func readBody(r *http.Request) (string, []fakeFile, error) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		b, err := io.ReadAll(r.Body)
		return string(b), nil, err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var payload string
	var files []fakeFile
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return payload, files, nil
		}
		if err != nil {
			return "", nil, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return "", nil, err
		}
		if p.FormName() == "payload_json" {
			payload = string(data)
		} else {
			files = append(files, fakeFile{Name: p.FileName(), Data: string(data)})
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
}
