package telegram

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/store"
)

// BenchmarkWebhookFloor is BenchmarkWebhookTelegram's load (20 senders, each with its own
// chat, the same client, keep-alive connections, closed loop or paced) against the least
// a webhook gateway must do, without plangate's channel, inbox or engine: a minimal
// net/http server on loopback that per request checks the secret header in constant
// time, reads the body, decodes the update, saves it durably and answers 200 (a
// redelivered id is answered 200 and not saved again). The save is a group commit of
// the concurrent requests: commit=own, the benchmark's own (one IMMEDIATE transaction of
// INSERTs, one row per update, then an fdatasync of the -wal, led by the first caller, the
// others woken at once; WAL, synchronous=NORMAL, 1 KB pages as plangate's store),
// commit=store, plangate's store (a durable SetChannelState of one row per update, its
// group commit and its fsync outside the writer).
//
// work=bare answers and does nothing else: a sender's next update goes at the 200, the
// time to the 200 with nothing else wanting the CPUs. work=reply then does, off the
// request, what a gateway's engine must for an instant model: a lazy write of the
// answer, the sendMessage through go-telegram/bot to the same fake Bot API as
// BenchmarkWebhookTelegram's, a lazy write marking the update handled; a sender's next
// update goes when its reply reached the fake, as in BenchmarkWebhookTelegram. Reported as
// there (req/s, p50/p99 to the 200 at the client and at the server, to the reply,
// cpu-ms/msg, fsyncs/req), and commit_p50_ms/commit_p99_ms, the handler's wait for its
// save: srv_p50_ms less commit_p50_ms is what the rest of the request costs.
func BenchmarkWebhookFloor(b *testing.B) {
	for _, commit := range []string{"own", "store"} {
		b.Run("commit="+commit, func(b *testing.B) {
			for _, work := range []string{"bare", "reply"} {
				b.Run("work="+work, func(b *testing.B) {
					b.Run("closed", func(b *testing.B) { benchFloor(b, commit, work == "reply", 0) })
					for _, rate := range webhookRates {
						b.Run(fmt.Sprintf("paced=%d", rate), func(b *testing.B) { benchFloor(b, commit, work == "reply", float64(rate)) })
					}
				})
			}
		})
	}
}

// floorHook is the floor's webhook server.
type floorHook struct {
	log   floorLog
	reply bool
	bot   *bot.Bot
	ctx   context.Context

	mu      sync.Mutex
	seen    map[int64]bool  // ids saved (or being saved), against redeliveries
	commits []time.Duration // each request's wait for its save
	replies sync.WaitGroup
}

// floorUpdate is what the floor reads of an update.
type floorUpdate struct {
	ID      int64 `json:"update_id"`
	Message struct {
		Text string `json:"text"`
		Chat struct {
			ID int64 `json:"id"`
		} `json:"chat"`
	} `json:"message"`
}

func (f *floorHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !httpserver.SecretEqual(r.Header.Get(secretHeader), hookSecret) {
		http.Error(w, "wrong secret", http.StatusUnauthorized)
		return
	}
	if r.ContentLength <= 0 || r.ContentLength > 1<<20 {
		http.Error(w, "length required", http.StatusLengthRequired)
		return
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		http.Error(w, "short body", http.StatusBadRequest)
		return
	}
	var u floorUpdate
	if err := json.Unmarshal(body, &u); err != nil || u.ID <= 0 {
		http.Error(w, "not an update", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	dup := f.seen[u.ID]
	f.seen[u.ID] = true
	f.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusOK)
		return
	}
	start := time.Now()
	if err := f.log.save(u.ID, body); err != nil {
		f.mu.Lock()
		delete(f.seen, u.ID)
		f.mu.Unlock()
		http.Error(w, "storing failed", http.StatusServiceUnavailable)
		return
	}
	took := time.Since(start)
	f.mu.Lock()
	f.commits = append(f.commits, took)
	f.mu.Unlock()
	if f.reply {
		f.replies.Go(func() { f.answer(u) })
	}
	w.WriteHeader(http.StatusOK)
}

// answer is the engine's least for an instant model: the answer recorded (lazily), sent,
// and the update marked handled (lazily).
func (f *floorHook) answer(u floorUpdate) {
	text := "re: " + u.Message.Text
	if err := f.log.lazy(u.ID, "answer", text); err != nil {
		panic(err)
	}
	if _, err := f.bot.SendMessage(f.ctx, &bot.SendMessageParams{ChatID: u.Message.Chat.ID, Text: text}); err != nil {
		panic(err)
	}
	if err := f.log.lazy(u.ID, "handled", ""); err != nil {
		panic(err)
	}
}

// floorLog is the floor's store: save is durable before it returns, lazy committed.
type floorLog interface {
	save(id int64, body []byte) error
	lazy(id int64, what, value string) error
	fsyncs() int64
}

// storeLog saves through plangate's store, a row of channel_state per update.
type storeLog struct{ s *store.Store }

func (l storeLog) save(id int64, body []byte) error {
	return l.s.SetChannelState(context.Background(), "floor", "bot", strconv.FormatInt(id, 10), string(body))
}

func (l storeLog) lazy(id int64, what, value string) error {
	return l.s.SetChannelStateLazy(context.Background(), "floor", "bot", strconv.FormatInt(id, 10)+"/"+what, value)
}

func (l storeLog) fsyncs() int64 { return l.s.GroupStats().Durable }

// ownLog is a group commit of its own on one SQLite connection, shaped as plangate's
// store: the first caller to find no batch running leads one of everything queued (one
// transaction at synchronous=NORMAL), and a durable caller whose batch committed runs an
// fdatasync of the -wal unless one is running, which covers every commit made before it
// began, while the next batch commits. Waiters are woken together.
type ownLog struct {
	conn   *sql.Conn
	insert *sql.Stmt
	mark   *sql.Stmt
	wal    *os.File

	mu        sync.Mutex
	cond      *sync.Cond
	queue     []ownWrite
	next      uint64 // the batch the queue will be
	running   bool
	committed uint64 // the last batch committed
	syncing   bool
	synced    uint64 // the last batch made durable
	err       error
	syncs     atomic.Int64
}

type ownWrite struct {
	id          int64
	what, value string // what is "" for an update's save
	body        []byte
}

func openOwnLog(b *testing.B) *ownLog {
	path := filepath.Join(b.TempDir(), "floor.db")
	boot, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := boot.Exec(fmt.Sprintf("PRAGMA page_size=%d; PRAGMA journal_mode=WAL; CREATE TABLE updates (id INTEGER PRIMARY KEY, body BLOB NOT NULL, handled INTEGER NOT NULL DEFAULT 0); CREATE TABLE answers (id INTEGER PRIMARY KEY, text TEXT NOT NULL)", store.PageSize)); err != nil {
		b.Fatal(err)
	}
	boot.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_synchronous=NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	l := &ownLog{next: 1}
	l.cond = sync.NewCond(&l.mu)
	if l.conn, err = db.Conn(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.conn.Close() })
	if l.insert, err = l.conn.PrepareContext(context.Background(), `INSERT OR IGNORE INTO updates (id, body) VALUES (?, ?)`); err != nil {
		b.Fatal(err)
	}
	if l.mark, err = l.conn.PrepareContext(context.Background(), `INSERT OR REPLACE INTO answers (id, text) VALUES (?, ?)`); err != nil {
		b.Fatal(err)
	}
	if _, err := l.conn.ExecContext(context.Background(), `BEGIN IMMEDIATE; INSERT INTO answers VALUES (0, ''); COMMIT`); err != nil {
		b.Fatal(err) // creates the -wal
	}
	if l.wal, err = os.OpenFile(path+"-wal", os.O_RDWR, 0); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.wal.Close() })
	return l
}

func (l *ownLog) save(id int64, body []byte) error {
	return l.write(ownWrite{id: id, body: body}, true)
}

func (l *ownLog) lazy(id int64, what, value string) error {
	return l.write(ownWrite{id: id, what: what, value: value}, false)
}

func (l *ownLog) fsyncs() int64 { return l.syncs.Load() }

func (l *ownLog) write(w ownWrite, durable bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(l.queue, w)
	batch := l.next
	for {
		switch {
		case l.err != nil:
			return l.err
		case durable && l.synced >= batch, !durable && l.committed >= batch:
			return nil
		case l.committed >= batch && !l.syncing:
			l.sync()
		case l.committed < batch && !l.running:
			l.run()
		default:
			l.cond.Wait()
		}
	}
}

// run commits the queued writes as batch next; called, and returns, holding mu.
func (l *ownLog) run() {
	l.running = true
	writes, batch := l.queue, l.next
	l.queue = nil
	l.next++
	l.mu.Unlock()
	err := l.commit(writes)
	l.mu.Lock()
	l.running = false
	l.committed = batch
	if err != nil && l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
}

// sync makes every batch committed so far durable; called, and returns, holding mu.
func (l *ownLog) sync() {
	l.syncing = true
	upTo := l.committed
	l.mu.Unlock()
	err := syscall.Fdatasync(int(l.wal.Fd()))
	l.syncs.Add(1)
	l.mu.Lock()
	l.syncing = false
	if err == nil {
		l.synced = max(l.synced, upTo)
	} else if l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
}

func (l *ownLog) commit(writes []ownWrite) error {
	ctx := context.Background()
	if _, err := l.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for _, w := range writes {
		var err error
		switch w.what {
		case "":
			_, err = l.insert.ExecContext(ctx, w.id, w.body)
		case "handled":
			_, err = l.conn.ExecContext(ctx, `UPDATE updates SET handled = 1 WHERE id = ?`, w.id)
		default:
			_, err = l.mark.ExecContext(ctx, w.id, w.value)
		}
		if err != nil {
			_, _ = l.conn.ExecContext(ctx, "ROLLBACK")
			return err
		}
	}
	_, err := l.conn.ExecContext(ctx, "COMMIT")
	return err
}

// benchFloor runs BenchmarkWebhookFloor's case: commit "own" or "store", with the reply
// work or not, at rate updates/s (0: the closed loop).
func benchFloor(b *testing.B, commit string, reply bool, rate float64) {
	const senders = webhookSenders
	f := &floorHook{reply: reply, seen: map[int64]bool{}, ctx: context.Background()}
	switch commit {
	case "own":
		f.log = openOwnLog(b)
	default:
		s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "plangate.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		f.log = storeLog{s}
	}
	replies := channeltest.NewReplies()
	api := newFakeAPI(b)
	api.onSent = func(_ int64, text string, at time.Time) { replies.Seen(text, at) }
	var err error
	f.bot, err = bot.New(api.token, bot.WithSkipGetMe(), bot.WithServerURL(api.URL()),
		bot.WithHTTPClient(time.Second, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}))
	if err != nil {
		b.Fatal(err)
	}
	var stamps channeltest.Stamps
	srv := httptest.NewServer(stamps.Wrap(f))
	b.Cleanup(srv.Close)
	b.Cleanup(f.replies.Wait)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	var nextID atomic.Int64
	nextID.Store(500_000)
	var mu sync.Mutex
	var viaHTTP, server []time.Duration
	trip := func(chat int64, n int) (time.Duration, error) {
		text := fmt.Sprintf("message %d in chat %d", n, chat)
		id := nextID.Add(1)
		body, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]any{
			"message_id": id, "date": 1_700_000_000, "text": text,
			"chat": map[string]any{"id": chat, "type": "private", "first_name": "b"},
			"from": map[string]any{"id": chat, "is_bot": false, "first_name": "b"},
		}})
		var wait func() (time.Time, error)
		if reply {
			wait = replies.Expect(text)
		}
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+WebhookPath, strings.NewReader(string(body)))
		req.Header.Set(secretHeader, hookSecret)
		sid := strconv.FormatInt(id, 10)
		req.Header.Set(channeltest.StampHeader, sid)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		at := time.Now()
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("update %d answered %d", id, resp.StatusCode)
		}
		out, ok := stamps.Take(sid)
		if !ok {
			return 0, errors.New("the server noted no answer")
		}
		mu.Lock()
		viaHTTP = append(viaHTTP, at.Sub(start))
		server = append(server, out.Sub(start))
		mu.Unlock()
		if !reply {
			return at.Sub(start), nil
		}
		got, err := wait()
		return got.Sub(start), err
	}
	for c := range senders { // as BenchmarkWebhookTelegram: a first round before the timing
		if _, err := trip(int64(7000+c), -1); err != nil {
			b.Fatal(err)
		}
	}
	// A redelivery is answered 200 and not saved again.
	if got := f.dupCheck(b, client, srv.URL); got != http.StatusOK {
		b.Fatalf("a redelivered update was answered %d", got)
	}
	f.mu.Lock()
	viaHTTP, server, f.commits = nil, nil, nil
	f.mu.Unlock()
	fsyncs, use := f.log.fsyncs(), channeltest.ReadUsage()
	latencies, elapsed := channeltest.Drive(b, senders, rate, func(w, n int) (time.Duration, error) {
		return trip(int64(7000+w), n)
	})
	b.ReportMetric(float64(f.log.fsyncs()-fsyncs)/float64(b.N), "fsyncs/req")
	channeltest.ReportUsage(b, use, b.N)
	f.mu.Lock()
	commits := f.commits
	f.mu.Unlock()
	b.ReportMetric(channeltest.Percentile(commits, 0.50), "commit_p50_ms")
	b.ReportMetric(channeltest.Percentile(commits, 0.99), "commit_p99_ms")
	t := channeltest.WebhookTimes{HTTP: viaHTTP, Server: server}
	if reply {
		t.Replies = latencies
	}
	channeltest.ReportWebhook(b, elapsed, t)
}

// dupCheck posts the first update again and returns the answer's status; the floor must
// not have saved it twice (its log holds one row per id: the save would still succeed,
// so the handler's seen set is what is checked).
func (f *floorHook) dupCheck(b *testing.B, client *http.Client, url string) int {
	body := []byte(`{"update_id":500001,"message":{"message_id":500001,"date":1700000000,"text":"again","chat":{"id":7000,"type":"private"}}}`)
	f.mu.Lock()
	before := len(f.commits)
	f.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, url+WebhookPath, strings.NewReader(string(body)))
	req.Header.Set(secretHeader, hookSecret)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	f.mu.Lock()
	after := len(f.commits)
	f.mu.Unlock()
	if after != before {
		b.Fatal("a redelivered update was saved again")
	}
	return resp.StatusCode
}
