package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The fakes and the /proc readings of BenchmarkGatewayProcess.

// benchBotAPI is a Bot API fake for timing a gateway in another process: getUpdates is
// held open until an update is queued (woken at once, not polled) or the client's own
// long-poll timeout passes, updates below the offset are forgotten as Telegram forgets
// them, and every sendMessage is reported to onSent with the time its request arrived.
type benchBotAPI struct {
	srv    *httptest.Server
	dials  atomic.Int64 // connections the gateway opened
	polls  atomic.Int64 // getUpdates requests
	onSent func(text string, at time.Time)

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when an update is queued
	closing chan struct{} // closed at cleanup: held polls answer
	queue   []benchUpdate
	nextID  int64
	msgID   int64
	served  map[int64]time.Time // when each update was first handed out
}

type benchUpdate struct {
	id   int64
	body string
}

const benchBotToken = "4242:bench-token"

// newBenchBotAPI starts the fake; onSent must be set before the gateway starts.
func newBenchBotAPI(b *testing.B) *benchBotAPI {
	f := &benchBotAPI{changed: make(chan struct{}), closing: make(chan struct{}), nextID: 1, served: map[int64]time.Time{}}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.dials.Add(1)
		}
	}
	f.srv.Start()
	b.Cleanup(func() {
		close(f.closing)
		f.srv.Close()
	})
	return f
}

// say queues a person's text in private chat chat and returns the update's id.
func (f *benchBotAPI) say(chat int64, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextID
	f.nextID++
	f.queue = append(f.queue, benchUpdate{id, fmt.Sprintf(
		`{"update_id":%d,"message":{"message_id":%d,"date":1764500000,"chat":{"id":%d,"type":"private","first_name":"Bench"},"from":{"id":%d,"is_bot":false,"first_name":"Bench"},"text":%q}}`,
		id, id, chat, chat, text)})
	close(f.changed)
	f.changed = make(chan struct{})
	return id
}

// servedAt is when update id was first handed out.
func (f *benchBotAPI) servedAt(id int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served[id]
}

func (f *benchBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getUpdates":
		f.getUpdates(w, r)
	case "getMe":
		io.WriteString(w, `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"Bench","username":"BenchBot"}}`)
	case "sendMessage", "editMessageText":
		_ = r.ParseMultipartForm(1 << 20)
		chat, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
		if method == "sendMessage" && f.onSent != nil {
			f.onSent(r.FormValue("text"), arrived)
		}
		f.mu.Lock()
		f.msgID++
		id := f.msgID
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764500000,"chat":{"id":%d,"type":"private"},"text":"x"}}`, id, chat)
	default: // sendChatAction, setMyCommands, deleteWebhook, …
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

func (f *benchBotAPI) getUpdates(w http.ResponseWriter, r *http.Request) {
	f.polls.Add(1)
	var q struct {
		Offset  int64 `json:"offset"`
		Timeout int   `json:"timeout"`
	}
	_ = json.NewDecoder(r.Body).Decode(&q) // the gateway polls with a JSON body
	hold := time.NewTimer(time.Duration(q.Timeout) * time.Second)
	defer hold.Stop()
	for {
		f.mu.Lock()
		keep := f.queue[:0]
		var out []string
		for _, u := range f.queue {
			if u.id < q.Offset {
				continue // confirmed by this offset
			}
			keep = append(keep, u)
			out = append(out, u.body)
			if _, ok := f.served[u.id]; !ok {
				f.served[u.id] = time.Now()
			}
		}
		f.queue = keep
		changed := f.changed
		f.mu.Unlock()
		if len(out) > 0 {
			io.WriteString(w, `{"ok":true,"result":[`+strings.Join(out, ",")+`]}`)
			return
		}
		select {
		case <-changed:
		case <-hold.C:
			io.WriteString(w, `{"ok":true,"result":[]}`)
			return
		case <-f.closing:
			io.WriteString(w, `{"ok":true,"result":[]}`)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// benchModel is an OpenAI-compatible chat completions endpoint that answers at once with
// "re: " and the last user text, and records per text when it was asked and how long its
// handler took (reading the request, answering): the model's own time, subtracted from a
// round trip to leave the gateway's.
type benchModel struct {
	srv *httptest.Server

	mu    sync.Mutex
	calls map[string]modelCall // by the last user text
}

type modelCall struct {
	at   time.Time
	took time.Duration
}

func newBenchModel(b *testing.B) *benchModel {
	m := &benchModel{calls: map[string]modelCall{}}
	m.srv = httptest.NewServer(m)
	b.Cleanup(m.srv.Close)
	return m
}

func (m *benchModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	msgs, ok := readChatMessages(w, r)
	if !ok {
		return
	}
	last := ""
	for _, msg := range msgs {
		if s, ok := msg.Content.(string); ok && msg.Role == "user" {
			last = s
		}
	}
	answer, _ := json.Marshal("re: " + last)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1764500000,"model":"bench","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, answer)
	took := time.Since(start)
	m.mu.Lock()
	m.calls[last] = modelCall{at: start, took: took}
	m.mu.Unlock()
}

// call is the model's call for text (zero: it was not asked).
func (m *benchModel) call(text string) modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[text]
}

// procUsage is what a child process has consumed so far, read from /proc.
type procUsage struct {
	onCPU      time.Duration // sum over its threads of schedstat's time on the CPU (ns)
	runq       time.Duration // the same of the time runnable but waiting for a CPU
	ticks      int64         // utime+stime of /proc/<pid>/stat, in clock ticks (USER_HZ)
	sysTicks   int64         // stime alone
	writeBytes int64         // write_bytes of /proc/<pid>/io
	threads    int
	rssKB      int64 // VmRSS
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on Linux
// whatever the kernel's own tick rate.
const userHZ = 100

// readProcUsage reads pid's counters; an error means the process is gone.
func readProcUsage(pid int) (procUsage, error) {
	var u procUsage
	dir := fmt.Sprintf("/proc/%d", pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return u, fmt.Errorf("reading the gateway's stat: %w", err)
	}
	// Fields after the command name (which may hold spaces): state is field 3, utime 14,
	// stime 15, num_threads 20.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 18 {
		return u, fmt.Errorf("reading the gateway's stat: %d fields", len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	u.ticks, u.sysTicks = ut+st, st
	u.threads, _ = strconv.Atoi(f[17])
	tasks, _ := filepath.Glob(dir + "/task/*/schedstat")
	for _, t := range tasks {
		s, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		if v := strings.Fields(string(s)); len(v) >= 2 {
			run, _ := strconv.ParseInt(v[0], 10, 64)
			wait, _ := strconv.ParseInt(v[1], 10, 64)
			u.onCPU += time.Duration(run)
			u.runq += time.Duration(wait)
		}
	}
	u.writeBytes = procField(dir+"/io", "write_bytes:")
	u.rssKB = procField(dir+"/status", "VmRSS:")
	return u, nil
}

// procField is the number after prefix on its line of a /proc file (0 if absent).
func procField(path, prefix string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
