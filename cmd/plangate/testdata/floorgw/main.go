// Command floorgw is BenchmarkGatewayFloor's minimal gateway: per Telegram message only
// the I/O plangate's guarantees require, with the libraries and SQLite settings plangate
// uses, so the benchmark measures the floor under plangate's cost. It reads the api_url
// and base_url of the config.yaml the benchmark writes for plangate, in its working
// directory, and stops on SIGTERM. Test-only (under testdata: not part of ./...).
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/mattn/go-sqlite3"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var _ = sqlite3.ErrNotADB // the driver, registered as "sqlite3"

const schema = `
CREATE TABLE IF NOT EXISTS sessions (id TEXT NOT NULL PRIMARY KEY, channel TEXT NOT NULL DEFAULT '',
  account TEXT NOT NULL DEFAULT '', chat TEXT NOT NULL DEFAULT '', thread TEXT NOT NULL DEFAULT '',
  phase TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', injections TEXT NOT NULL DEFAULT '[]',
  version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_address ON sessions (channel, account, chat, thread);
CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
  role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', tool_calls TEXT, tool_call_id TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL DEFAULT '', at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_session ON messages (session_id, id);
CREATE TABLE IF NOT EXISTS inbound (channel TEXT NOT NULL, account TEXT NOT NULL, event_id TEXT NOT NULL,
  at TEXT NOT NULL, PRIMARY KEY (channel, account, event_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, channel TEXT NOT NULL,
  reply TEXT NOT NULL, created_at TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sent_at TEXT,
  platform_id TEXT NOT NULL DEFAULT '', dropped TEXT NOT NULL DEFAULT '', owner TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS channel_state (channel TEXT NOT NULL, account TEXT NOT NULL, key TEXT NOT NULL,
  value TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (channel, account, key));
`

const timeLayout = "2006-01-02T15:04:05.000000000Z"

type gw struct {
	api, token string
	hc         *http.Client
	w, r       *sql.DB
	wal        *os.File
	b          *bot.Bot
	model      openai.ChatCompletionService

	mu      sync.Mutex
	pending map[int64]json.RawMessage
	offset  int64

	// lean (FLOORGW_LEAN=1) keeps each session's last 40 messages in memory, reading only
	// the session row, and posts the model request built with encoding/json over net/http,
	// as plangate does (core/llm); without it each turn reads the history back and calls
	// openai-go's ChatCompletionService.
	lean     bool
	modelURL string
	modelKey string
	history  map[string][][2]string // lean: by session
}

func main() {
	cfg, err := os.ReadFile("config.yaml")
	if err != nil {
		log.Fatal(err)
	}
	find := func(key string) string {
		m := regexp.MustCompile(key + `: "([^"]+)"`).FindSubmatch(cfg)
		if m == nil {
			log.Fatalf("no %s in config.yaml", key)
		}
		return string(m[1])
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// FLOORGW_CPUPROFILE names a file for a CPU profile of the whole run (warm-up
	// included), written at SIGTERM: where the floor's time goes.
	if path := os.Getenv("FLOORGW_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	g := &gw{api: find("api_url"), token: os.Getenv("TELEGRAM_BOT_TOKEN"), pending: map[int64]json.RawMessage{},
		lean: os.Getenv("FLOORGW_LEAN") == "1", modelURL: find("base_url"), modelKey: os.Getenv("BENCH_MODEL_KEY"),
		history: map[string][][2]string{}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	g.hc = &http.Client{Transport: t}
	if err := g.open("plangate.db"); err != nil {
		log.Fatal(err)
	}
	g.b, err = bot.New(g.token, bot.WithSkipGetMe(), bot.WithServerURL(g.api), bot.WithHTTPClient(50*time.Second, g.hc))
	if err != nil {
		log.Fatal(err)
	}
	mt := http.DefaultTransport.(*http.Transport).Clone()
	mt.MaxIdleConnsPerHost = 64
	g.model = openai.NewChatCompletionService(option.WithHTTPClient(&http.Client{Transport: mt}),
		option.WithAPIKey(os.Getenv("BENCH_MODEL_KEY")), option.WithMaxRetries(0), option.WithBaseURL(find("base_url")))
	var turns sync.WaitGroup
	for ctx.Err() == nil {
		ups, err := g.getUpdates(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Printf("getUpdates: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		for _, u := range ups {
			turns.Go(func() { g.turn(context.WithoutCancel(ctx), u) })
		}
		if len(ups) > 0 {
			if err := g.saveInbox(ctx, true); err != nil {
				log.Fatal(err)
			}
		}
	}
	turns.Wait()
}

func (g *gw) open(path string) error {
	if _, err := os.Stat(path); err != nil {
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			return err
		}
		_, err = db.Exec("PRAGMA page_size = 1024; PRAGMA journal_mode = WAL")
		db.Close()
		if err != nil {
			return err
		}
	}
	var err error
	g.w, err = sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL&_stmt_cache_size=64")
	if err != nil {
		return err
	}
	g.w.SetMaxOpenConns(1)
	g.w.SetMaxIdleConns(1)
	g.w.SetConnMaxLifetime(0)
	if _, err := g.w.Exec(schema); err != nil {
		return err
	}
	if g.wal, err = os.OpenFile(path+"-wal", os.O_RDWR, 0); err != nil {
		return err
	}
	g.r, err = sql.Open("sqlite3", "file:"+path+"?mode=ro&_query_only=1&_busy_timeout=5000&_stmt_cache_size=64")
	if err != nil {
		return err
	}
	g.r.SetMaxOpenConns(4)
	g.r.SetMaxIdleConns(4)
	return nil
}

// getUpdates long-polls as channels/telegram/poll.go does and notes the batch pending.
func (g *gw) getUpdates(ctx context.Context) ([]*models.Update, error) {
	g.mu.Lock()
	off := g.offset
	g.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"offset": off, "timeout": 50, "allowed_updates": []string{"message", "callback_query"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.api+"/bot"+g.token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var ans struct {
		OK     bool              `json:"ok"`
		Result []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || !ans.OK {
		return nil, fmt.Errorf("decoding getUpdates: %v", err)
	}
	var out []*models.Update
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, raw := range ans.Result {
		var u models.Update
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		g.pending[u.ID] = raw
		g.offset = max(g.offset, u.ID+1)
		out = append(out, &u)
	}
	return out, nil
}

// inboxValue is the channel_state value: the offset and the pending updates.
func (g *gw) inboxValue() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, _ := json.Marshal(struct {
		Offset  int64             `json:"offset"`
		Pending []json.RawMessage `json:"pending"`
	}{g.offset, mapValues(g.pending)})
	return string(v)
}

func mapValues(m map[int64]json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

const upsertInbox = `INSERT INTO channel_state (channel, account, key, value, updated_at) VALUES ('telegram', '4242', 'inbox', ?, ?)
	ON CONFLICT (channel, account, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// saveInbox writes the inbox in one transaction; durable adds an fdatasync of the -wal.
func (g *gw) saveInbox(ctx context.Context, durable bool) error {
	if _, err := g.w.ExecContext(ctx, upsertInbox, g.inboxValue(), now()); err != nil {
		return err
	}
	if durable {
		return syscall.Fdatasync(int(g.wal.Fd()))
	}
	return nil
}

func now() string { return time.Now().UTC().Format(timeLayout) }

func (g *gw) turn(ctx context.Context, u *models.Update) {
	if err := g.handle(ctx, u); err != nil {
		log.Printf("turn %d: %v", u.ID, err)
	}
}

func (g *gw) handle(ctx context.Context, u *models.Update) error {
	if u.Message == nil {
		return nil
	}
	chat := u.Message.Chat.ID
	sid := "telegram:4242:" + strconv.FormatInt(chat, 10)
	var answer string
	var version int64
	var err error
	if g.lean {
		answer, version, err = g.askLean(ctx, sid, u.Message.Text)
	} else {
		answer, version, err = g.ask(ctx, sid, u.Message.Text)
	}
	if err != nil {
		return err
	}
	outbox, err := g.commitTurn(ctx, sid, chat, version, u, answer)
	if err != nil {
		return err
	}
	if g.lean {
		g.mu.Lock()
		h := append(g.history[sid], [2]string{"user", u.Message.Text}, [2]string{"assistant", answer})
		g.history[sid] = h[max(0, len(h)-40):]
		g.mu.Unlock()
	}
	sent, err := g.b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: answer,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()}})
	if err != nil {
		return err
	}
	g.mu.Lock()
	delete(g.pending, u.ID)
	g.mu.Unlock()
	tx, err := g.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET sent_at = ?, platform_id = ?, attempts = 1 WHERE id = ?`, now(), strconv.Itoa(sent.ID), outbox); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, upsertInbox, g.inboxValue(), now()); err != nil {
		return err
	}
	return tx.Commit()
}

// ask reads the session and its history back and asks the model through openai-go.
func (g *gw) ask(ctx context.Context, sid, text string) (string, int64, error) {
	hist, version, err := g.read(ctx, sid)
	if err != nil {
		return "", 0, err
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful assistant.")}
	for _, h := range hist {
		if h[0] == "user" {
			msgs = append(msgs, openai.UserMessage(h[1]))
		} else {
			msgs = append(msgs, openai.AssistantMessage(h[1]))
		}
	}
	msgs = append(msgs, openai.UserMessage(text))
	res, err := g.model.New(ctx, openai.ChatCompletionNewParams{Model: "bench", Messages: msgs})
	if err != nil {
		return "", 0, err
	}
	return res.Choices[0].Message.Content, version, nil
}

type leanMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// askLean reads only the session row, takes the history from memory and posts the
// request with net/http.
func (g *gw) askLean(ctx context.Context, sid, text string) (string, int64, error) {
	var version int64
	err := g.r.QueryRowContext(ctx, `SELECT version FROM sessions WHERE id = ?`, sid).Scan(&version)
	if err != nil && err != sql.ErrNoRows {
		return "", 0, err
	}
	g.mu.Lock()
	msgs := make([]leanMsg, 0, len(g.history[sid])+2)
	msgs = append(msgs, leanMsg{"system", "You are a helpful assistant."})
	for _, h := range g.history[sid] {
		msgs = append(msgs, leanMsg{h[0], h[1]})
	}
	g.mu.Unlock()
	msgs = append(msgs, leanMsg{"user", text})
	body, err := json.Marshal(struct {
		Model    string    `json:"model"`
		Messages []leanMsg `json:"messages"`
	}{"bench", msgs})
	if err != nil {
		return "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(g.modelURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.modelKey)
	res, err := g.hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return "", 0, err
	}
	var ans struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || len(ans.Choices) == 0 {
		return "", 0, fmt.Errorf("model answer (HTTP %d): %v: %.200s", res.StatusCode, err, data)
	}
	return ans.Choices[0].Message.Content, version, nil
}

// read is the turn's read transaction: the session row and its last 40 messages.
func (g *gw) read(ctx context.Context, sid string) (hist [][2]string, version int64, err error) {
	tx, err := g.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	var phase string
	err = tx.QueryRowContext(ctx, `SELECT phase, version FROM sessions WHERE id = ?`, sid).Scan(&phase, &version)
	if err != nil && err != sql.ErrNoRows {
		return nil, 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT role, content FROM (SELECT id, role, content FROM messages
		WHERE session_id = ? ORDER BY id DESC LIMIT 40) ORDER BY id`, sid)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var h [2]string
		if err := rows.Scan(&h[0], &h[1]); err != nil {
			return nil, 0, err
		}
		hist = append(hist, h)
	}
	return hist, version, rows.Err()
}

// commitTurn is the turn's lazy write: the inbound key, both messages, the outbox row and
// the session row; it returns the outbox row's id.
func (g *gw) commitTurn(ctx context.Context, sid string, chat, version int64, u *models.Update, answer string) (int64, error) {
	at := now()
	tx, err := g.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	reply, _ := json.Marshal(map[string]any{"to": map[string]any{"channel": "telegram", "account": "4242", "chat": strconv.FormatInt(chat, 10)}, "text": answer})
	steps := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO inbound (channel, account, event_id, at) VALUES ('telegram', '4242', ?, ?)`, []any{strconv.FormatInt(u.ID, 10), at}},
		{`INSERT INTO messages (session_id, role, content, at) VALUES (?, 'user', ?, ?)`, []any{sid, u.Message.Text, at}},
		{`INSERT INTO messages (session_id, role, content, at) VALUES (?, 'assistant', ?, ?)`, []any{sid, answer, at}},
		{`INSERT INTO sessions (id, channel, account, chat, phase, version, created_at, updated_at)
			VALUES (?, 'telegram', '4242', ?, 'off', 1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET version = version + 1, updated_at = excluded.updated_at`, []any{sid, strconv.FormatInt(chat, 10), at, at}},
	}
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO outbox (session_id, channel, reply, created_at, owner) VALUES (?, 'telegram', ?, ?, 'floor')`, sid, string(reply), at)
	if err != nil {
		return 0, err
	}
	id, _ := res.LastInsertId()
	return id, tx.Commit()
}
