package main

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/plangate/plangate/channels/adminapi"
)

// outageTelegram is soakTelegram whose sendMessage fails for the chats in down (500, or
// 429 with parameters.retry_after) until healed; it records every sendMessage with the
// time it came and what it was answered.
type outageTelegram struct {
	*soakTelegram
	mu    sync.Mutex
	down  map[int64]outageFault
	tries map[int64][]outageTry
}

type outageFault struct {
	code       int
	retryAfter int // seconds, for a 429
}

type outageTry struct {
	at   time.Time
	code int
}

func newOutageTelegram() *outageTelegram {
	return &outageTelegram{soakTelegram: newSoakTelegram(), down: map[int64]outageFault{}, tries: map[int64][]outageTry{}}
}

func (f *outageTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/sendMessage") {
		f.soakTelegram.ServeHTTP(w, r)
		return
	}
	_ = r.ParseMultipartForm(8 << 20)
	chat, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
	f.mu.Lock()
	fault, down := f.down[chat]
	code := http.StatusOK
	if down {
		code = fault.code
	}
	f.tries[chat] = append(f.tries[chat], outageTry{time.Now(), code})
	f.mu.Unlock()
	if !down {
		f.soakTelegram.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(fault.code)
	if fault.code == http.StatusTooManyRequests {
		fmt.Fprintf(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`, fault.retryAfter, fault.retryAfter)
		return
	}
	fmt.Fprintf(w, `{"ok":false,"error_code":%d,"description":"Internal Server Error"}`, fault.code)
}

func (f *outageTelegram) fail(chat int, fault outageFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[soakChatID(chat)] = fault
}

func (f *outageTelegram) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = map[int64]outageFault{}
}

func (f *outageTelegram) triesOf(chat int) []outageTry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]outageTry(nil), f.tries[soakChatID(chat)]...)
}

// textsIn lists the texts chat was sent, in the order the fake took them.
func (f *outageTelegram) textsIn(chat int) []string {
	f.soakTelegram.mu.Lock()
	defer f.soakTelegram.mu.Unlock()
	var out []string
	for _, s := range f.sent {
		if s.chat == soakChatID(chat) {
			out = append(out, strings.TrimSpace(s.text))
		}
	}
	return out
}

// TestSendOutageProcess holds Telegram's send side of one chat at 500 and of another at
// 429 (retry_after 1 s) in a real `plangate serve` with channels.outbox_max_age 2s,
// until the process has given up a reply in each (the admin API lists it), then heals
// and sends more. A third chat is never down. From the fake, the admin API and /metrics:
// every reply is delivered or given up, exactly once; each chat's delivered replies are
// in commit order; each given-up reply is listed once and counted once; each chat that
// lost replies gets exactly one notice, naming how many and the last (a notice given up
// while the chat is still down is listed and counted too, and what it told is in the next);
// no sendMessage to
// the 429 chat came before retry_after had passed since a 429; the healthy chat got every
// reply and no notice.
func TestSendOutageProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real process through a platform outage; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tg := newOutageTelegram()
	tgSrv := httptest.NewServer(tg)
	defer tgSrv.Close()
	model := httptest.NewServer(http.HandlerFunc(soakModel))
	defer model.Close()
	const adminToken = "admin-outage-token-0123456789"
	dir := t.TempDir()
	cfg := fmt.Sprintf(`store: {path: plangate.db}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: "${SOAK_KEY}", model: echo, max_retries: 0, timeout: 10s}
channels:
  outbox_max_age: 2s
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
http: {listen: "127.0.0.1:0", admin_token: "${ADMIN_TOKEN}"}
`, model.URL+"/v1", tgSrv.URL)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runReplica(t, ctx, dir, "TELEGRAM_BOT_TOKEN=4242:soak-token", "SOAK_KEY=k", "ADMIN_TOKEN="+adminToken)
	defer p.signal(syscall.SIGTERM)

	const internal, limited, healthy = 0, 1, 2
	chats := []int{internal, limited, healthy}
	name := map[int]string{internal: "i", limited: "l", healthy: "h"}
	tg.fail(internal, outageFault{code: http.StatusInternalServerError})
	tg.fail(limited, outageFault{code: http.StatusTooManyRequests, retryAfter: 1})
	sent := map[int]int{} // messages pushed per chat; message k's answer is "echo: <name>-k"
	say := func(chat int) {
		tg.message(chat, fmt.Sprintf("%s-%d", name[chat], sent[chat]))
		sent[chat]++
	}
	dropped := func() []adminapi.DroppedJSON {
		code, body := get(t, p.base+"/api/v1/outbox/dropped?limit=1000", "Authorization", "Bearer "+adminToken)
		var out adminapi.Page[adminapi.DroppedJSON]
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.NextCursor != nil {
			t.Fatalf("GET /api/v1/outbox/dropped: %d %s, want one page", code, body)
		}
		return out.Items
	}
	droppedIn := func(rows []adminapi.DroppedJSON, chat int) []adminapi.DroppedJSON {
		var out []adminapi.DroppedJSON
		for _, d := range rows {
			if d.Address.Chat == strconv.FormatInt(soakChatID(chat), 10) {
				out = append(out, d)
			}
		}
		return out
	}

	for range 4 {
		for _, c := range chats {
			say(c)
		}
	}
	p.poll(t, ctx, "gave up a reply in each chat that is down", func() bool {
		rows := dropped()
		return len(droppedIn(rows, internal)) > 0 && len(droppedIn(rows, limited)) > 0
	})
	tg.heal()
	for range 2 {
		for _, c := range chats {
			say(c)
		}
	}

	// Settled: every answer was delivered or given up, and each chat that lost one has
	// been told.
	answers := func(chat int) (delivered []int, notices []string) {
		for _, s := range tg.textsIn(chat) {
			var k int
			if _, err := fmt.Sscanf(s, "echo: "+name[chat]+"-%d", &k); err == nil && s == fmt.Sprintf("echo: %s-%d", name[chat], k) {
				delivered = append(delivered, k)
			} else {
				notices = append(notices, s)
			}
		}
		return delivered, notices
	}
	p.poll(t, ctx, "delivered or gave up every reply and told the chats", func() bool {
		rows := dropped()
		for _, c := range chats {
			delivered, notices := answers(c)
			if len(delivered)+len(droppedIn(rows, c)) < sent[c] || len(droppedIn(rows, c)) > 0 && len(notices) == 0 || !tg.drained() {
				return false
			}
		}
		return true
	})

	rows := dropped()
	_, metrics := get(t, p.base+"/metrics")
	for _, c := range chats {
		delivered, notices := answers(c)
		// The notices given up while the chat was still down are listed too; what they
		// told is counted again in the next (see dropped.go).
		var lost []adminapi.DroppedJSON
		for _, d := range droppedIn(rows, c) {
			if d.Kind != "notice" {
				lost = append(lost, d)
			}
		}
		// Each answer delivered or given up, exactly once.
		seen := map[int]int{}
		for _, k := range delivered {
			seen[k]++
		}
		last := -1
		for _, d := range lost {
			var k int
			if _, err := fmt.Sscanf(d.Text, "echo: "+name[c]+"-%d", &k); err != nil {
				t.Errorf("chat %s: a given-up row that is no answer: %+v", name[c], d)
				continue
			}
			seen[k]++
			last = max(last, k)
			if d.Reason != "older than 2s (channels.outbox_max_age)" {
				t.Errorf("chat %s: reply %d given up for %q", name[c], k, d.Reason)
			}
		}
		for k := range sent[c] {
			if seen[k] != 1 {
				t.Errorf("chat %s: answer %d delivered or given up %d times (delivered %v, given up %d)", name[c], k, seen[k], delivered, len(lost))
			}
		}
		// Commit order: each chat's messages are answered in the order they came.
		for i := 1; i < len(delivered); i++ {
			if delivered[i-1] >= delivered[i] {
				t.Errorf("chat %s: replies out of order: %v", name[c], delivered)
				break
			}
		}
		// One notice per chat that lost replies, naming how many and the last.
		switch {
		case len(lost) == 0 && len(notices) > 0:
			t.Errorf("chat %s lost nothing but was sent %q", name[c], notices)
		case len(lost) == 1 && (len(notices) != 1 || !strings.HasPrefix(notices[0], fmt.Sprintf(`A reply could not be delivered during the outage; it began "echo: %s-%d`, name[c], last))):
			t.Errorf("chat %s lost 1 reply (%d); notices %q", name[c], last, notices)
		case len(lost) > 1 && (len(notices) != 1 || !strings.HasPrefix(notices[0], fmt.Sprintf(`%d replies could not be delivered during the outage; the last began "echo: %s-%d`, len(lost), name[c], last))):
			t.Errorf("chat %s lost %d replies (the last %d); notices %q", name[c], len(lost), last, notices)
		}
		t.Logf("chat %s: %d answers, %d delivered %v, %d given up, notices %q, %d sendMessage requests", name[c], sent[c], len(delivered), delivered, len(lost), notices, len(tg.triesOf(c)))
	}
	if n := len(droppedIn(rows, healthy)); n != 0 {
		t.Errorf("the healthy chat lost %d replies", n)
	}
	// Counted once each: the metric is the admin API's count.
	counted := regexp.MustCompile(`(?m)^plangate_outbox_dropped_total\{channel="telegram",reason="expired"\} (\d+)$`).FindStringSubmatch(metrics)
	if counted == nil || counted[1] != strconv.Itoa(len(rows)) {
		t.Errorf("plangate_outbox_dropped_total %v; want %d expired, as listed", counted, len(rows))
	}
	// Retry-After: after a 429, the chat's next sendMessage waits the second asked for.
	tries := tg.triesOf(limited)
	for i := 1; i < len(tries); i++ {
		if tries[i-1].code == http.StatusTooManyRequests && tries[i].at.Sub(tries[i-1].at) < time.Second {
			t.Errorf("sendMessage %d to the 429 chat came %v after a 429 with retry_after 1", i, tries[i].at.Sub(tries[i-1].at))
		}
	}
	for _, tr := range tg.triesOf(healthy) {
		if tr.code != http.StatusOK {
			t.Errorf("the healthy chat was answered %d", tr.code)
		}
	}
}
