package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// A conversation's page is a list of items (messages and plan cards); its live stream is
// a log of events with increasing sequence numbers: "msg" appends an item, "edit" replaces
// one, "card" re-renders every card of one plan. Payloads are rendered once, when the
// event happens, so a thousand open pages cost one rendering.
//
// The log is in memory. A restarted process rebuilds the items from the store (the
// transcript and every plan version as a card) and tells a page that reconnects with an
// old id to reload; only what the store never had (notices, status and help answers,
// nudge texts) is lost.
const (
	maxItems  = 500  // items a page shows
	maxEvents = 2000 // events a reconnecting page can catch up on before it must reload
	seedLimit = 200  // transcript entries read back from the store
	// editable is how many of the newest sent messages Edit can still change; an older
	// one is sent anew by the Hub, as on a platform that refuses the edit.
	editable = 10000
)

type itemKind string

const (
	itemUser   itemKind = "user"
	itemBot    itemKind = "bot"
	itemNotice itemKind = "notice"
	itemNudge  itemKind = "nudge"
	itemCard   itemKind = "plan"
)

// item is one entry of a conversation's page.
type item struct {
	dom    string // element id
	kind   itemKind
	planID string        // cards: rendered from the store each time the page is
	html   template.HTML // sanitized content (cards: as of the last event)
	text   string        // the markdown or plain text, for tests and logs
	by     string
	at     time.Time
}

// event is one entry of the live stream.
type event struct {
	seq   uint64
	name  string // msg, edit, card
	frame []byte // the whole SSE frame (id, event, data), written as is to every stream
}

type convo struct {
	addr  core.Address
	epoch string // the channel's, for event ids
	once  sync.Once

	mu      sync.RWMutex
	items   []*item
	events  []*event
	next    uint64 // seq of the next event; the first is 1
	changed chan struct{}
}

// convo returns the conversation of a, rebuilding its items from the store the first time
// it is used in this process.
func (c *Channel) convo(ctx context.Context, a core.Address) *convo {
	id := a.SessionID()
	c.mu.Lock()
	cv := c.convos[id]
	if cv == nil {
		cv = &convo{addr: a, epoch: c.epoch, next: 1, changed: make(chan struct{})}
		c.convos[id] = cv
	}
	c.mu.Unlock()
	cv.once.Do(func() { c.seed(ctx, cv) })
	return cv
}

// seed rebuilds a conversation's items from the store.
func (c *Channel) seed(ctx context.Context, cv *convo) {
	id := cv.addr.SessionID()
	tr, err := c.d.Store.Transcript(ctx, id, seedLimit)
	if err != nil {
		c.log.Warn("reading transcript", "session", id, "err", err)
	}
	plans, err := c.d.Store.Plans(ctx, id)
	if err != nil {
		c.log.Warn("reading plans", "session", id, "err", err)
	}
	var items []*item
	for _, m := range tr {
		switch {
		case m.Role == core.RoleUser && m.Content != "" && !strings.HasPrefix(m.Content, "["):
			items = append(items, &item{kind: itemUser, html: escapeText(m.Content), text: m.Content, by: cv.addr.Account, at: m.At})
		case m.Role == core.RoleAssistant && m.Content != "":
			items = append(items, &item{kind: itemBot, html: renderMarkdown(m.Content), text: m.Content, at: m.At})
		}
	}
	for _, p := range plans {
		items = append(items, &item{kind: itemCard, planID: p.ID, text: p.Body.Title, at: p.CreatedAt})
	}
	slices.SortStableFunc(items, func(a, b *item) int { return a.at.Compare(b.at) })
	cv.mu.Lock()
	defer cv.mu.Unlock()
	for _, it := range items {
		it.dom = "s" + strconv.Itoa(len(cv.items)+1)
		cv.items = append(cv.items, it)
	}
	cv.trimLocked()
}

// add appends an item and its "msg" event.
func (cv *convo) add(it *item, payload []byte) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	cv.items = append(cv.items, it)
	cv.emitLocked("msg", payload)
}

// edit replaces an item's content and emits an "edit" event.
func (cv *convo) edit(it *item, html template.HTML, text string, payload []byte) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	it.html, it.text = html, text
	cv.emitLocked("edit", payload)
}

// card emits a "card" event: every card of the plan shows the new rendering.
func (cv *convo) card(planID string, html template.HTML) {
	p := payload(map[string]string{"plan": planID, "html": string(html)})
	cv.mu.Lock()
	defer cv.mu.Unlock()
	for _, it := range cv.items {
		if it.planID == planID {
			it.html = html
		}
	}
	cv.emitLocked("card", p)
}

func (cv *convo) emitLocked(name string, payload []byte) {
	frame := make([]byte, 0, len(payload)+64)
	frame = fmt.Appendf(frame, "id: %s-%d\nevent: %s\ndata: %s\n\n", cv.epoch, cv.next, name, payload)
	cv.events = append(cv.events, &event{seq: cv.next, name: name, frame: frame})
	cv.next++
	cv.trimLocked()
	close(cv.changed)
	cv.changed = make(chan struct{})
}

func (cv *convo) trimLocked() {
	if n := len(cv.items) - maxItems; n > 0 {
		cv.items = slices.Delete(cv.items, 0, n)
	}
	// Reslicing, not shifting: streams hold sub-slices of events and read them unlocked.
	if n := len(cv.events) - maxEvents; n > 0 {
		cv.events = cv.events[n:]
	}
}

// since returns the events after seq and a channel closed on the next one. ok is false
// when the stream cannot continue from seq: events it missed were dropped, or seq is
// from the future (another process).
func (cv *convo) since(seq uint64) (evs []*event, changed <-chan struct{}, ok bool) {
	cv.mu.RLock()
	defer cv.mu.RUnlock()
	if seq >= cv.next {
		return nil, cv.changed, seq == cv.next-1
	}
	first := cv.next - uint64(len(cv.events))
	if seq+1 < first {
		return nil, nil, false
	}
	return cv.events[seq+1-first:], cv.changed, true
}

// snapshot returns the page's items and the seq of the last event they include.
func (cv *convo) snapshot() ([]item, uint64) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	out := make([]item, len(cv.items))
	for i, it := range cv.items {
		out[i] = *it
	}
	return out, cv.next - 1
}

// Send implements channels.Channel by show.
func (c *Channel) Send(ctx context.Context, r core.Reply) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := c.checkAddress(r.To); err != nil {
		return "", fmt.Errorf("sending on web: %w", err)
	}
	if c.mirror != nil {
		c.mirror.sent(r)
	}
	return c.show(ctx, r), nil
}

// show adds a reply to its conversation and pushes it to every open page of it.
func (c *Channel) show(ctx context.Context, r core.Reply) string {
	n := c.ids.Add(1)
	id := fmt.Sprintf("w%d", n)
	cv := c.convo(ctx, r.To)
	it := c.present(ctx, id, r)
	c.mu.Lock()
	c.byMsgID[id] = msgRef{session: r.To.SessionID(), item: it}
	if n > editable {
		delete(c.byMsgID, fmt.Sprintf("w%d", n-editable)) // ids only grow; forget the oldest
	}
	c.mu.Unlock()
	switch {
	case it.kind == itemCard && r.Kind == core.ReplyPlan:
		cv.add(it, payload(map[string]string{"id": it.dom, "plan": it.planID, "html": string(c.itemHTML(it))}))
	case it.kind == itemCard:
		cv.card(it.planID, it.html)
	default:
		cv.add(it, c.shows(it))
	}
	return id
}

// EditsInPlace implements channels.Drafter: replies may be shown as drafts here.
func (c *Channel) EditsInPlace() {}

// Edit implements channels.Editor: the message is replaced on every open page. A progress
// checklist of a plan re-renders the plan's card instead.
func (c *Channel) Edit(ctx context.Context, id string, r core.Reply) error {
	err := c.edit(ctx, id, r)
	if err == nil && c.mirror != nil {
		c.mirror.sent(r)
	}
	return err
}

func (c *Channel) edit(ctx context.Context, id string, r core.Reply) error {
	if err := c.checkAddress(r.To); err != nil {
		return fmt.Errorf("editing on web: %w", err)
	}
	c.mu.Lock()
	ref, ok := c.byMsgID[id]
	c.mu.Unlock()
	if !ok || ref.session != r.To.SessionID() {
		return fmt.Errorf("editing on web: no message %q in this conversation", id)
	}
	cv := c.convo(ctx, r.To)
	it := c.present(ctx, id, r)
	if it.kind == itemCard {
		cv.card(it.planID, it.html)
		return nil
	}
	it.dom = ref.item.dom
	cv.edit(ref.item, it.html, it.text, c.shows(it))
	return nil
}

var _ channels.ApprovalNoter = (*Channel)(nil)

// NoteApprovals implements channels.ApprovalNoter: the pending version's card is drawn
// again from the store, with its approvals so far and its buttons.
func (c *Channel) NoteApprovals(ctx context.Context, r core.Reply) error {
	if err := c.checkAddress(r.To); err != nil {
		return fmt.Errorf("showing approvals on web: %w", err)
	}
	p, err := c.d.Store.PlanByApproval(ctx, r.Ref)
	if err != nil {
		return fmt.Errorf("showing approvals on web: %w", err)
	}
	c.convo(ctx, r.To).card(p.ID, c.renderCard(ctx, p, r.To.Account))
	return nil
}

func (c *Channel) checkAddress(a core.Address) error {
	if a.Channel != Name {
		return fmt.Errorf("address of channel %q", a.Channel)
	}
	if _, ok := c.keys[a.Account]; !ok {
		return fmt.Errorf("no user %q", a.Account)
	}
	return nil
}

// present turns a reply into an item: a reply about a plan (proposal, progress, decision)
// is its card, rendered from the store; any other is sanitized markdown with its buttons.
func (c *Channel) present(ctx context.Context, id string, r core.Reply) *item {
	it := &item{dom: "m" + strings.TrimPrefix(id, "w"), kind: itemBot, text: r.Text, at: c.d.Now()}
	switch r.Kind {
	case core.ReplyNotice:
		it.kind = itemNotice
	case core.ReplyNudge:
		it.kind = itemNudge
	case core.ReplyPlan, core.ReplyProgress, core.ReplyDecided, core.ReplyReport:
		if p, ok := c.planOf(ctx, r); ok {
			it.kind, it.planID = itemCard, p.ID
			it.html = c.renderCard(ctx, p, r.To.Account)
			return it
		}
	}
	it.html = c.renderReply(r)
	return it
}

// planOf finds the plan a plan-related reply is about: the approval id on its buttons or
// in Ref, else the session's current plan.
func (c *Channel) planOf(ctx context.Context, r core.Reply) (core.Plan, bool) {
	approval := r.Ref
	for _, b := range r.Buttons {
		if approval == "" {
			approval = b.Action.ApprovalID
		}
	}
	if approval != "" {
		if p, err := c.d.Store.PlanByApproval(ctx, approval); err == nil {
			return p, true
		}
	}
	if r.Kind == core.ReplyDecided {
		return core.Plan{}, false
	}
	s, err := c.d.Store.Session(ctx, r.To.SessionID())
	if err != nil || s.PlanID == "" {
		return core.Plan{}, false
	}
	p, err := c.d.Store.Plan(ctx, s.PlanID)
	return p, err == nil
}

// shows is the payload of a "msg" or "edit" event that shows it.
func (c *Channel) shows(it *item) []byte {
	return payload(map[string]string{"id": it.dom, "html": string(c.itemHTML(it))})
}

func payload(v map[string]string) []byte {
	b, _ := json.Marshal(v) // a map of strings always encodes
	return b
}
