package engine

import (
	"context"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// admit asks the access gate about m, parsed as r, before anything is queued. A refused
// message changes nothing: it is not queued, its session is neither read nor created,
// nothing is stored (not even its inbound key: a redelivery is refused the same way) and
// no model is called. When the gate says a reply is due, it is sent directly, not through
// the outbox, since there is no session row to hang it on; then is called once it went.
// It reports whether m was admitted.
func (e *Engine) admit(ctx context.Context, m core.Message, r commands.Result, then func(error)) bool {
	decision := m.Action != nil || r.Kind == commands.IsCommand && r.Cmd.Spec.Who != commands.Anyone
	v := e.gate.Admit(e.d.Now(), m, decision)
	if v.Refused == "" {
		return true
	}
	e.obs.obs.AccessRefused(m.Address.Channel, string(v.Refused))
	e.d.Log.Debug("inbound message refused by access", "channel", m.Address.Channel, "sender", m.Sender.ID, "reason", v.Refused, "told", v.Reply != "")
	if v.Reply == "" {
		then(nil)
		return false
	}
	e.mu.Lock()
	e.goCountedLocked(func() { // Wait covers the reply
		// A failed send is logged by send; the message stays refused either way.
		_, _ = e.send(ctx, core.Reply{To: m.Address, Kind: core.ReplyNotice, Text: v.Reply, InReplyTo: m.ID})
		then(nil)
	})
	e.mu.Unlock()
	return false
}
