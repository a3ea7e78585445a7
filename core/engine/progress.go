package engine

import (
	"context"
	"sync"

	"github.com/plangate/plangate/core"
)

// progressIDs remembers the platform message id of each plan's checklist, here and in the
// store's channel state, so progress is one message edited in place, also after a restart.
// When the id cannot be read or written, the next checklist is a new message.
type progressIDs struct {
	st  core.Store
	mu  sync.Mutex
	ids map[string]string
}

// Where the ids live in the store's state: not a channel's own records.
const (
	progressStateChannel = "plangate"
	progressStateAccount = "progress"
)

func (p *progressIDs) get(ctx context.Context, planID string) string {
	p.mu.Lock()
	id, ok := p.ids[planID]
	p.mu.Unlock()
	if ok {
		return id
	}
	id, _, err := p.st.ChannelState(ctx, progressStateChannel, progressStateAccount, planID)
	if err != nil {
		return ""
	}
	p.remember(planID, id)
	return id
}

func (p *progressIDs) set(ctx context.Context, planID, id string) {
	p.mu.Lock()
	old, known := p.ids[planID]
	p.mu.Unlock()
	if known && old == id {
		return // an edit in place: nothing new to keep
	}
	p.remember(planID, id)
	_ = p.st.SetChannelState(ctx, progressStateChannel, progressStateAccount, planID, id)
}

func (p *progressIDs) forget(ctx context.Context, planID string) {
	p.mu.Lock()
	old, known := p.ids[planID]
	delete(p.ids, planID)
	p.mu.Unlock()
	if !known || old != "" {
		_ = p.st.SetChannelState(ctx, progressStateChannel, progressStateAccount, planID, "")
	}
}

func (p *progressIDs) remember(planID, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]string{}
	}
	p.ids[planID] = id
}
