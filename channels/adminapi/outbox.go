package adminapi

import (
	"net/http"
	"strconv"

	"github.com/plangate/plangate/channels/httpserver"
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

// Bounds of GET /api/v1/outbox/dropped's limit.
const (
	defaultDroppedLimit = 100
	maxDroppedLimit     = 1000
)

func (a *API) dropped(w http.ResponseWriter, r *http.Request) {
	limit := defaultDroppedLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDroppedLimit {
			httpserver.WriteError(w, http.StatusBadRequest, "limit "+quote(v)+" is not a whole number from 1 to "+strconv.Itoa(maxDroppedLimit))
			return
		}
		limit = n
	}
	rows, err := a.d.Store.DroppedOutbox(r.Context(), 0, limit)
	if err != nil {
		a.failed(w, "listing dropped replies", err)
		return
	}
	out := make([]DroppedJSON, 0, len(rows))
	for _, o := range rows {
		to := o.Reply.To
		d := DroppedJSON{ID: o.ID, SessionID: o.SessionID, Kind: string(o.Reply.Kind), Text: o.Reply.Text, Files: []string{},
			Address:  AddressJSON{Channel: to.Channel, Account: to.Account, Chat: to.Chat, Thread: to.Thread},
			Attempts: o.Attempts, Reason: o.Dropped, CreatedAt: o.CreatedAt.UTC().Format(timeFormat)}
		for _, f := range o.Reply.Attachments {
			d.Files = append(d.Files, f.Name)
		}
		out = append(out, d)
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
}
