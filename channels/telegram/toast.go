package telegram

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// maxToast is Telegram's limit on the text of answerCallbackQuery.
const maxToast = 200

// A toast is the short answer a button click gets (answerCallbackQuery). It should say what
// happened, which only the engine knows, so a click waits briefly for the engine's first
// word on it in that conversation: the ReplyDecided for its approval id, or a notice or
// reply. If none comes in time, or the engine finishes without one, a default is shown.
type toast struct {
	board   *toastBoard
	session string
	ref     string // approval id of the click, "" for answers
	text    chan string
	once    sync.Once
}

// toastBoard holds the clicks waiting for their answer, by session, oldest first: the
// engine handles a session in order, so its next reply there is about the oldest click.
type toastBoard struct {
	mu      sync.Mutex
	waiting map[string][]*toast
}

func newToastBoard() *toastBoard { return &toastBoard{waiting: map[string][]*toast{}} }

// expect registers a click in session a; call it before the click is queued.
func (b *toastBoard) expect(a core.Address, ref string) *toast {
	t := &toast{board: b, session: a.SessionID(), ref: ref, text: make(chan string, 1)}
	b.mu.Lock()
	b.waiting[t.session] = append(b.waiting[t.session], t)
	b.mu.Unlock()
	return t
}

// observe looks at an outgoing reply for the answer to a waiting click.
func (b *toastBoard) observe(r core.Reply) {
	var pick func(t *toast) bool
	switch r.Kind {
	case core.ReplyDecided:
		pick = func(t *toast) bool { return t.ref != "" && t.ref == r.Ref }
	case core.ReplyNotice, core.ReplyText:
		pick = func(*toast) bool { return true }
	default:
		return
	}
	b.mu.Lock()
	list := b.waiting[r.To.SessionID()]
	i := slices.IndexFunc(list, pick)
	b.mu.Unlock()
	if i >= 0 {
		list[i].settle(channels.FirstLine(r.Text))
	}
}

// settle gives the click its answer; the first answer wins. "" means the default.
func (t *toast) settle(text string) {
	t.once.Do(func() {
		t.text <- text
		b := t.board
		b.mu.Lock()
		defer b.mu.Unlock()
		list := slices.DeleteFunc(slices.Clone(b.waiting[t.session]), func(x *toast) bool { return x == t })
		if len(list) == 0 {
			delete(b.waiting, t.session)
		} else {
			b.waiting[t.session] = list
		}
	})
}

// finish settles the click with the default if the engine said nothing about it.
func (t *toast) finish() { t.settle("") }

// answerWhenSettled answers the callback query once t settles or toastWait passes.
func (c *Channel) answerWhenSettled(ctx context.Context, queryID string, t *toast, fallback string) {
	timer := time.NewTimer(c.tune.toastWait)
	defer timer.Stop()
	var text string
	select {
	case text = <-t.text:
	case <-timer.C:
		t.finish()
	case <-ctx.Done():
		t.finish()
	}
	if text == "" {
		text = fallback
	}
	c.answer(ctx, queryID, text)
}

// answer answers a callback query. A failure (often a query too old, after a restart)
// costs only the toast.
func (c *Channel) answer(ctx context.Context, queryID, text string) {
	err := c.do(ctx, 0, false, "answerCallbackQuery", func(ctx context.Context) error {
		_, err := c.b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: clip(text, maxToast)})
		return err
	})
	if err != nil {
		c.log.Debug("answering a button click", "err", err)
	}
}

// clip shortens s to at most n UTF-16 units (Telegram's characters), marking the cut.
func clip(s string, n int) string {
	if channels.UTF16Len(s) <= n {
		return s
	}
	used := 1 // the ellipsis
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		if used+w > n {
			return strings.TrimSpace(s[:i]) + "…"
		}
		used += w
	}
	return s
}
