package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// Dropped replies are never silent: each is logged, counted for /metrics (Observer
// OutboxDropped, by channel and reason) and kept in the store with its reason (the admin
// API lists them), and its chat gets one notice once sending there works again. The
// notes of a session gather while any of its rows wait to be sent again (so one outage
// gives one notice), and become one outbox row when none waits: that row goes through the
// same order and retries as any reply, so it reaches the chat when the platform takes it.
// A notice row that ages out itself gives its count back to the session's note, so the
// notice that gets through counts every reply lost.

// Why a reply was given up, as OutboxDropped's reason.
const (
	dropExpired = "expired" // older than channels.outbox_max_age
	dropRefused = "refused" // the platform refused it for good
	dropTold    = "told"    // undeliverable, and the chat got the effect's own notice instead
)

// dropNote is what a session's chat has not yet been told about its dropped replies.
type dropNote struct {
	to    core.Address
	count int
	last  core.Reply // the newest dropped reply
	why   string     // dropExpired or dropRefused, of the newest
}

// drop gives reply o up for the reason why (kind: dropExpired, dropRefused or dropTold):
// the store records it, the metric counts it and, unless the chat was told already, the
// chat's note grows. The notice about dropped
// replies is itself never noted, so a chat that cannot be reached is told nothing more.
func (e *Engine) drop(ctx context.Context, o core.Outgoing, kind, why string) error {
	e.d.Log.Warn("dropping an unsent reply", "outbox", o.ID, "session", o.SessionID, "created", o.CreatedAt, "why", why)
	if err := e.d.Store.DropOutbox(ctx, o.ID, why); err != nil {
		return fmt.Errorf("dropping reply %d: %w", o.ID, err)
	}
	e.obs.obs.OutboxDropped(o.Reply.To.Channel, kind)
	if isDropNotice(o.Reply) {
		e.renote(o.ID, o.SessionID)
		return nil
	}
	if kind == dropTold || !shown(o.Reply.Kind) {
		return nil
	}
	e.dropsMu.Lock()
	defer e.dropsMu.Unlock()
	n := e.drops[o.SessionID]
	if n == nil {
		n = &dropNote{to: o.Reply.To}
		e.drops[o.SessionID] = n
	}
	n.count++
	n.last, n.why = o.Reply, kind
	return nil
}

// renote puts what notice row id told back into its session's note: the notice was given
// up (the chat was still unreachable and it aged out), so the next notice counts those
// drops too. Drops noted since are newer and keep their last.
func (e *Engine) renote(id int64, session string) {
	e.dropsMu.Lock()
	defer e.dropsMu.Unlock()
	told, ok := e.telling[id]
	if !ok {
		return
	}
	delete(e.telling, id)
	if n := e.drops[session]; n != nil {
		n.count += told.count
	} else {
		e.drops[session] = &told
	}
}

// told forgets the note of notice row id: the platform took it.
func (e *Engine) told(id int64) {
	e.dropsMu.Lock()
	defer e.dropsMu.Unlock()
	delete(e.telling, id)
}

// unnote takes the newest drop out of session's note: the chat was told about it another
// way (a plan's own notice).
func (e *Engine) unnote(session string) {
	e.dropsMu.Lock()
	defer e.dropsMu.Unlock()
	if n := e.drops[session]; n != nil {
		if n.count--; n.count <= 0 {
			delete(e.drops, session)
		}
	}
}

// shown reports whether a reply of kind k is something a person reads (not the retiring
// of buttons, nor an approvals line that the decision's own reply repeats).
func shown(k core.ReplyKind) bool { return k != core.ReplyDecided && k != core.ReplyApprovals }

// tellDropped posts the notice of each session's dropped replies once none of its rows
// waits to be sent again: a lazy commit of its own row, delivered at once. A session
// whose rows still wait keeps its note until they have gone.
func (e *Engine) tellDropped(ctx context.Context) {
	e.dropsMu.Lock()
	ready := map[string]dropNote{}
	for sid, n := range e.drops {
		if !e.sending.waits(sid) {
			ready[sid] = *n
			delete(e.drops, sid)
		}
	}
	e.dropsMu.Unlock()
	for sid, n := range ready {
		row := core.Outgoing{SessionID: sid, CreatedAt: e.d.Now(), Owner: e.d.Owner,
			Reply: core.Reply{To: n.to, Kind: core.ReplyNotice, Text: n.text()}}
		ch := core.Change{SessionID: sid, Lazy: true, Outbox: []core.Outgoing{row}}
		if _, err := e.d.Store.Commit(ctx, ch); err != nil {
			e.d.Log.Warn("storing the notice of dropped replies", "session", sid, "err", err)
			e.dropsMu.Lock()
			if m := e.drops[sid]; m != nil {
				m.count += n.count // newer drops keep their last
			} else {
				e.drops[sid] = &n
			}
			e.dropsMu.Unlock()
			continue
		}
		e.dropsMu.Lock()
		e.telling[ch.Outbox[0].ID] = n
		e.dropsMu.Unlock()
		_, _ = e.deliver(ctx, &ch.Outbox[0])
	}
}

// dropNoticeEnd ends every notice about dropped replies; isDropNotice recognises one by it
// (a notice row that is itself dropped is not a drop to tell: what it told is noted again,
// renote).
const dropNoticeEnd = " /plan shows where things stand."

func isDropNotice(r core.Reply) bool {
	return r.Kind == core.ReplyNotice && strings.HasSuffix(r.Text, dropNoticeEnd) && strings.Contains(r.Text, "could not be delivered")
}

// text is the notice: how many replies were lost, how, and what the last one began with.
func (n dropNote) text() string {
	how := "during the outage"
	if n.why == dropRefused {
		how = "(the platform refused them)"
		if n.count == 1 {
			how = "(the platform refused it)"
		}
	}
	if n.count == 1 {
		return fmt.Sprintf("A reply could not be delivered %s; it began %s.%s", how, beginning(n.last), dropNoticeEnd)
	}
	return fmt.Sprintf("%d replies could not be delivered %s; the last began %s.%s", n.count, how, beginning(n.last), dropNoticeEnd)
}

// beginningRunes is how much of a dropped reply's text the notice quotes.
const beginningRunes = 40

// beginning quotes the start of reply r: its text on one line, at most beginningRunes runes, or
// its file's name when it has no text.
func beginning(r core.Reply) string {
	text := machine.OneLine(r.Text)
	if text == "" {
		if len(r.Attachments) > 0 {
			return "with the file " + r.Attachments[0].Name
		}
		return "without text"
	}
	if rs := []rune(text); len(rs) > beginningRunes {
		text = strings.TrimRight(string(rs[:beginningRunes]), " ") + "…"
	}
	return `"` + text + `"`
}
