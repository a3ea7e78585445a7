package adminapi

import (
	"net/http"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// DroppedJSON is one reply the outbox gave up (older than channels.outbox_max_age, or
// refused by the platform for good), newest first in GET /api/v1/outbox/dropped.
type DroppedJSON struct {
	ID        int64       `json:"id"`
	SessionID string      `json:"session_id"`
	Address   AddressJSON `json:"address"`
	Kind      string      `json:"kind"` // the reply's kind: "" text, plan, question, progress, notice, nudge, ...
	Text      string      `json:"text"`
	Files     []string    `json:"files"` // attachment names; never null
	Attempts  int         `json:"attempts"`
	Reason    string      `json:"reason"`
	CreatedAt string      `json:"created_at"`
}

func (a *API) dropped(w http.ResponseWriter, r *http.Request) {
	const list = "dropped"
	p, ok := readPage(w, r, list, idCursor)
	if !ok {
		return
	}
	rows, err := a.d.Store.DroppedOutbox(r.Context(), p.after.N, p.limit+1)
	if err != nil {
		a.failed(w, "listing dropped replies", err)
		return
	}
	rows, next := trim(p, rows, func(o core.Outgoing) cursor { return cursor{List: list, N: o.ID} })
	out := Page[DroppedJSON]{Items: make([]DroppedJSON, 0, len(rows)), NextCursor: next}
	for _, o := range rows {
		to := o.Reply.To
		d := DroppedJSON{ID: o.ID, SessionID: o.SessionID, Kind: string(o.Reply.Kind), Text: o.Reply.Text, Files: []string{},
			Address:  AddressJSON{Channel: to.Channel, Account: to.Account, Chat: to.Chat, Thread: to.Thread},
			Attempts: o.Attempts, Reason: o.Dropped, CreatedAt: o.CreatedAt.UTC().Format(timeFormat)}
		for _, f := range o.Reply.Attachments {
			d.Files = append(d.Files, f.Name)
		}
		out.Items = append(out.Items, d)
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
}
