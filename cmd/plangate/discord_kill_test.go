package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// killDiscord is the REST side of Discord for a serve process with interactions http:
// who the bot is, channel kinds, channel messages, and the edits of interactions'
// deferred answers by token. It serves no gateway (messages are not this test's).
type killDiscord struct {
	mu      sync.Mutex
	edits   map[string][]string // interaction token -> bodies of the edits of its answer
	deletes []string            // tokens whose answer was deleted
	posts   []string            // channel messages
	nextID  int
}

var reOriginalAnswer = regexp.MustCompile(`^/api/v9/webhooks/900/([^/]+)/messages/@original$`)

func (f *killDiscord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	msg := fmt.Sprintf(`{"id":"%d","channel_id":"C1","type":0,"content":"ok"}`, 6000+f.nextID)
	switch m := reOriginalAnswer.FindStringSubmatch(r.URL.Path); {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v9/users/@me":
		_, _ = io.WriteString(w, `{"id":"900","username":"plangate","bot":true}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v9/channels/"):
		_, _ = io.WriteString(w, `{"id":"C1","guild_id":"G1","type":0}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v9/channels/C1/messages":
		f.posts = append(f.posts, string(body))
		_, _ = io.WriteString(w, msg)
	case m != nil && r.Method == http.MethodPatch:
		f.edits[m[1]] = append(f.edits[m[1]], string(body))
		_, _ = io.WriteString(w, msg)
	case m != nil && r.Method == http.MethodDelete:
		f.deletes = append(f.deletes, m[1])
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"Unknown route","code":0}`)
	}
}

func (f *killDiscord) editsOf(token string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.edits[token]...)
}

// TestDiscordKillAfterAckLosesNothing kills a real serve process (SQLite, interactions
// http) with SIGKILL while it holds two acknowledged /plan commands: A was committed and
// answered and its turn is still at the model; B waits behind it, acknowledged (its
// deferred answer) and not committed. On disk both are in the inbox. The restarted
// process answers B once, by editing its deferred answer with the saved token, and
// neither answers A again nor removes its answer.
func TestDiscordKillAfterAckLosesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := &killDiscord{edits: map[string][]string{}}
	api := httptest.NewServer(fake)
	defer api.Close()
	hold := newModelHold()
	defer hold.release()
	model := httptest.NewServer(hold.wrap(echoModel(false)))
	defer model.Close()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: k, model: echo, max_retries: 0, timeout: 30s}
channels:
  terminal: {enabled: false}
  discord: {enabled: true, token: "${DISCORD_BOT_TOKEN}", api_url: %q, interactions: http, public_key: %q}
http: {listen: "127.0.0.1:0", public_url: "http://127.0.0.1:1"}
`, model.URL+"/v1", api.URL, hex.EncodeToString(pub))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := "DISCORD_BOT_TOKEN=test-token.abc.DEF_secret"
	command := func(id, sub, option, value string) string {
		s := map[string]any{"name": sub, "type": 1}
		if option != "" {
			s["options"] = []any{map[string]any{"name": option, "type": 3, "value": value}}
		}
		b, _ := json.Marshal(map[string]any{
			"id": id, "application_id": "900", "type": 2, "token": "itok-" + id, "version": 1,
			"channel_id": "C1", "guild_id": "G1", "member": map[string]any{"user": map[string]any{"id": "111", "username": "alice"}},
			"data": map[string]any{"id": "cmd1", "name": "plan", "type": 1, "options": []any{s}},
		})
		return string(b)
	}
	const a, b = "1300000000000000101", "1300000000000000102"
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("never saw %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// The fake has no gateway, so /readyz stays 503 for discord; the interactions endpoint
	// takes requests all the same, and that is what the posts need.
	const taking = "taking discord interactions over http"
	first := launchReplica(t, ctx, dir, env)
	first.logged(t, ctx, taking)
	url := first.base + discord.InteractionsPath
	if code, body := signedPost(t, url, key, command(a, "on", "goal", "hold-first tidy the docs")); code != 200 || !strings.Contains(body, `"type":5`) {
		t.Fatalf("command A: %d %s, want the deferred answer\n%s", code, body, first.logs)
	}
	hold.wait(t, ctx, "hold-first")
	waitFor("A's answer", func() bool { return len(fake.editsOf("itok-"+a)) == 1 })
	if code, body := signedPost(t, url, key, command(b, "auto", "choice", "on")); code != 200 || !strings.Contains(body, `"type":5`) {
		t.Fatalf("command B: %d %s, want the deferred answer\n%s", code, body, first.logs)
	}
	first.signal(syscall.SIGKILL)
	if n := len(fake.editsOf("itok-" + b)); n != 0 {
		t.Fatalf("B was answered before the kill (it should wait behind A's turn): %q", fake.editsOf("itok-"+b))
	}

	st, err := store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	saved, _, err := st.ChannelState(ctx, discord.Name, "900", "inbox")
	seenA, _ := st.SeenInbound(ctx, core.InboundKey{Channel: discord.Name, Account: "G1", EventID: a})
	seenB, _ := st.SeenInbound(ctx, core.InboundKey{Channel: discord.Name, Account: "G1", EventID: b})
	st.Close()
	if err != nil || !strings.Contains(saved, "itok-"+a) || !strings.Contains(saved, "itok-"+b) {
		t.Fatalf("after the kill the inbox on disk is %q (%v); want both commands with their tokens", saved, err)
	}
	if !seenA || seenB {
		t.Fatalf("after the kill A committed %v, B committed %v; want only A", seenA, seenB)
	}

	hold.release()
	second := launchReplica(t, ctx, dir, env)
	second.logged(t, ctx, taking)
	waitFor("B's answer after the restart", func() bool { return len(fake.editsOf("itok-"+b)) > 0 })
	waitFor("the replayed commands settled", func() bool {
		return strings.Contains(second.logs.String(), "replaying discord interactions")
	})
	second.signal(syscall.SIGTERM)
	if e := fake.editsOf("itok-" + b); len(e) != 1 || !strings.Contains(strings.ToLower(e[0]), "auto") {
		t.Errorf("B's answer was edited %q, want once, about auto-approve\n%s", e, second.logs)
	}
	if e := fake.editsOf("itok-" + a); len(e) != 1 {
		t.Errorf("A's answer was edited %d times, want only the once before the kill: %q", len(e), e)
	}
	fake.mu.Lock()
	deletes := fake.deletes
	fake.mu.Unlock()
	if len(deletes) != 0 {
		t.Errorf("answers deleted after the restart: %q", deletes)
	}
	st, err = store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	saved, _, _ = st.ChannelState(ctx, discord.Name, "900", "inbox")
	if strings.Contains(saved, "itok-") {
		t.Errorf("after a clean stop the inbox still holds %q", saved)
	}
	if seen, _ := st.SeenInbound(ctx, core.InboundKey{Channel: discord.Name, Account: "G1", EventID: b}); !seen {
		t.Error("B is not stored as handled")
	}
}
