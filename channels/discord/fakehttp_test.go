package discord

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// testKey is the application's key pair in interactions http tests (a fixed seed: the
// tests sign as Discord does, with the private half).
var testKey = ed25519.NewKeyFromSeed([]byte("plangate-discord-test-key-seed-0"))

func testPublicKey() string { return hex.EncodeToString(testKey.Public().(ed25519.PublicKey)) }

// discordSign is X-Signature-Ed25519 as Discord computes it: over the timestamp followed
// by the raw body.
func discordSign(key ed25519.PrivateKey, ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(key, append([]byte(ts), body...)))
}

// ixSender delivers interactions to the interactions endpoint, signed, each on its own
// goroutine; a 200's body is recorded as the interaction's callback, as Discord does.
type ixSender struct {
	url string
	key ed25519.PrivateKey
	now func() time.Time // the adapter's clock: what the timestamp it checks is near

	mu     sync.Mutex
	status map[string]int // interaction id -> the answer's status
	wg     sync.WaitGroup
}

func newIxSender(url string, now func() time.Time) *ixSender {
	if now == nil {
		now = time.Now
	}
	return &ixSender{url: url, key: testKey, now: now, status: map[string]int{}}
}

// ts is the timestamp Discord would sign now.
func (h *ixSender) ts() string { return strconv.FormatInt(h.now().Unix(), 10) }

func (h *ixSender) send(f *fakeDiscord, token string, d map[string]any) {
	body, _ := json.Marshal(d)
	id, _ := d["id"].(string)
	h.wg.Go(func() {
		code, answer, err := h.post(body, h.ts(), h.key)
		if err != nil {
			f.t.Errorf("posting an interaction: %v", err)
			return
		}
		h.mu.Lock()
		h.status[id] = code
		h.mu.Unlock()
		f.mu.Lock()
		defer f.mu.Unlock()
		if code == http.StatusOK {
			if status, msg := f.recordCallbackLocked(f.ixs[token], answer); status != 0 {
				f.t.Errorf("the answer to interaction %s is refused: %s", id, msg)
			}
		}
		f.notifyLocked()
	})
}

// post sends one signed request.
func (h *ixSender) post(body []byte, ts string, key ed25519.PrivateKey) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Signature-Timestamp", ts)
	req.Header.Set("X-Signature-Ed25519", discordSign(key, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func (h *ixSender) statusOf(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status[id]
}
