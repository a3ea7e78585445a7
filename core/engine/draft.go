package engine

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/plangate/plangate/core"
)

// Drafts: with Config.Stream and a model that is a core.Streamer, a turn shows the answer
// while the model writes it, on channels that edit in place (core.Drafter). The first text
// posts a draft message directly (not through the outbox: a draft is best effort and never
// stored), later text edits it at most once per DraftEvery per chat (Telegram allows about
// one edit a second), and each tool call of the turn shows a short status line in it. The
// turn's final text is its outbox row as always, with ReplaceID set to the draft, so the
// delivery edits the draft into the answer — also after a restart, since the row keeps the
// id. A turn that ends without a final text (a plan, a question, a stop) leaves the draft
// saying what was done. A draft that could not be posted or edited is given up for the
// turn; the answer then comes as a new message.

// DraftEvery is the least time between two posts or edits of a chat's draft.
const DraftEvery = time.Second

// draftLimit is how many characters of a long answer the draft shows: one message on
// every platform, so an edit never spills into new messages. The final text is whole.
const draftLimit = 3000

// draftClocks remembers when each chat's draft was last posted or edited.
type draftClocks struct {
	mu   sync.Mutex
	last map[core.Address]time.Time
}

// take reports whether a chat's draft may change at now, and if so notes it.
func (c *draftClocks) take(a core.Address, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[a]; ok && now.Sub(t) < DraftEvery {
		return false
	}
	if c.last == nil {
		c.last = map[core.Address]time.Time{}
	}
	c.last[a] = now
	return true
}

// draft is one turn's draft message.
type draft struct {
	e         *Engine
	out       core.Drafter
	to        core.Address
	inReplyTo string

	mu      sync.Mutex
	id      string   // the platform's id once posted
	broken  bool     // a post or an edit failed: no more tries this turn
	claimed bool     // the final text took it over
	shown   string   // what the draft shows
	steps   []string // the status lines shown, in order
}

// newDraft is the draft of a turn of t, or nil when there is none to show.
func (t *jobRun) newDraft() *draft {
	e := t.e
	if !e.cfg.Stream {
		return nil
	}
	if _, ok := e.d.Model.(core.Streamer); !ok {
		return nil
	}
	out, ok := e.d.Out.(core.Drafter)
	if !ok || !out.CanDraft(t.sess.Address.Channel) {
		return nil
	}
	return &draft{e: e, out: out, to: t.sess.Address, inReplyTo: t.j.msg.ID}
}

// text shows the answer's text so far.
func (d *draft) text(ctx context.Context, text string) {
	if d == nil || strings.TrimSpace(text) == "" {
		return
	}
	d.show(ctx, clip(text))
}

// status shows the status line of a tool call about to run.
func (d *draft) status(ctx context.Context, call core.ToolCall) {
	if d == nil {
		return
	}
	line := statusLine(call)
	d.mu.Lock()
	if n := len(d.steps); n == 0 || d.steps[n-1] != line {
		d.steps = append(d.steps, line)
	}
	d.mu.Unlock()
	d.show(ctx, line)
}

// show posts or edits the draft to say s, when the chat's clock allows.
func (d *draft) show(ctx context.Context, s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken || d.claimed || s == d.shown || !d.e.drafts.take(d.to, d.e.d.Now()) {
		return
	}
	r := core.Reply{To: d.to, Text: s, InReplyTo: d.inReplyTo}
	if d.id == "" {
		id, err := d.out.PostDraft(ctx, r)
		if err != nil || id == "" {
			d.e.d.Log.Debug("posting a draft", "channel", d.to.Channel, "err", err)
			d.broken = true
			return
		}
		d.id = id
	} else if err := d.out.EditDraft(ctx, d.id, r); err != nil {
		d.e.d.Log.Debug("editing a draft", "channel", d.to.Channel, "err", err)
		d.broken = true
		return
	}
	d.shown = s
}

// claim hands the draft to the turn's final text: the id its reply replaces ("" when
// there is no draft to replace, and the answer is a new message).
func (d *draft) claim() string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.claimed = true
	if d.broken {
		return ""
	}
	return d.id
}

// close ends a draft the final text did not take over: it says what the turn did, or
// that its answer was cut off. Best effort, and not held back by the chat's clock: it is
// the draft's last change.
func (d *draft) close(ctx context.Context) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claimed || d.broken || d.id == "" {
		return
	}
	d.claimed = true
	s := d.shown + " (cut off)"
	if len(d.steps) > 0 {
		done := make([]string, len(d.steps))
		for i, l := range d.steps {
			done[i] = strings.TrimSuffix(l, "…")
		}
		s = "Worked on: " + strings.Join(done, " · ")
	}
	if err := d.out.EditDraft(ctx, d.id, core.Reply{To: d.to, Text: clip(s), InReplyTo: d.inReplyTo}); err != nil {
		d.e.d.Log.Debug("closing a draft", "channel", d.to.Channel, "err", err)
	}
}

// clip cuts s to draftLimit characters, marking the cut.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= draftLimit {
		return s
	}
	n := 0
	for i := range s {
		if n == draftLimit {
			return s[:i] + " …"
		}
		n++
	}
	return s
}

// statusLine is what a tool call shows in the draft while it runs: the tool in words and
// what it works on, when its arguments name that.
func statusLine(call core.ToolCall) string {
	var args struct {
		Path string   `json:"path"`
		Argv []string `json:"argv"`
	}
	_ = json.Unmarshal(call.Args, &args)
	file := ""
	if args.Path != "" {
		file = " " + path.Base(args.Path)
	}
	switch call.Name {
	case "read_file":
		return "reading" + file + "…"
	case "list_files":
		return "listing files…"
	case "search_files":
		return "searching…"
	case "write_file":
		return "writing" + file + "…"
	case "edit_file":
		return "editing" + file + "…"
	case "run_command":
		if len(args.Argv) > 0 {
			return "running " + shortArgv(args.Argv) + "…"
		}
		return "running a command…"
	case "exit_plan_mode":
		return "writing the plan…"
	case "enter_plan_mode":
		return "planning…"
	case "update_plan":
		return "updating the plan…"
	}
	if server, tool, ok := strings.Cut(call.Name, "__"); ok {
		return "asking " + server + " (" + tool + ")…"
	}
	return "using " + call.Name + "…"
}

// shortArgv is a command line cut to its first words.
func shortArgv(argv []string) string {
	const words, chars = 3, 40
	s := strings.Join(argv[:min(len(argv), words)], " ")
	if utf8.RuneCountInString(s) > chars {
		s = string([]rune(s)[:chars]) + "…"
	}
	return s
}
