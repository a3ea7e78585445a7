package adminapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/plangate/plangate/channels/httpserver"
)

// Every list is paged: at most limit items (DefaultLimit unless asked, at most MaxLimit) and
// the opaque cursor of the next page, which names the last item's place in the store's
// order (keyset), not an offset, so rows inserted between two requests neither shift
// nor repeat what the next page holds.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Page is one page of a list: its items in the list's order and the cursor of the next
// page, null on the last one.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// Query parameters of the list routes.
const (
	paramLimit  = "limit"
	paramCursor = "cursor"
	paramPhase  = "phase"
)

// withQuery refuses a request whose query string is malformed, names a parameter the
// route does not take (takes lists those it does) or gives one twice, before h runs.
func withQuery(takes []string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			httpserver.WriteError(w, http.StatusBadRequest, "malformed query string: "+quote(r.URL.RawQuery))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(q)) {
			switch {
			case !slices.Contains(takes, k) && len(takes) == 0:
				httpserver.WriteError(w, http.StatusBadRequest, "unknown query parameter "+quote(k)+"; this route takes none")
				return
			case !slices.Contains(takes, k):
				httpserver.WriteError(w, http.StatusBadRequest, "unknown query parameter "+quote(k)+"; this route takes "+strings.Join(takes, ", "))
				return
			case len(q[k]) > 1:
				httpserver.WriteError(w, http.StatusBadRequest, "query parameter "+quote(k)+" is given "+strconv.Itoa(len(q[k]))+" times; give it once")
				return
			}
		}
		h(w, r)
	}
}

// cursor is a place in one list, encoded as base64url JSON. List names the list and its
// filter, so a cursor is refused anywhere else; the rest is the last item's key.
type cursor struct {
	List string `json:"l"`
	At   string `json:"t,omitempty"` // sessions: updated_at, RFC 3339 with nanoseconds
	ID   string `json:"i,omitempty"` // sessions: id
	N    int64  `json:"n,omitempty"` // events and dropped replies: id
}

func (c cursor) encode() *string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings and an integer always encode
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

// idCursor tells whether c is a cursor of a list ordered by id alone (events, dropped
// replies).
func idCursor(c cursor) bool { return c.N > 0 && c.At == "" && c.ID == "" }

// pageRequest is a list request's limit and cursor (the zero cursor: the first page).
type pageRequest struct {
	limit int
	after cursor
}

// readPage reads limit and cursor for the list named list; on a bad value it has answered
// 400. An empty value is the same as none. valid tells whether a decoded cursor has the
// keys of list.
func readPage(w http.ResponseWriter, r *http.Request, list string, valid func(cursor) bool) (pageRequest, bool) {
	p := pageRequest{limit: DefaultLimit}
	q := r.URL.Query()
	if v := q.Get(paramLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			httpserver.WriteError(w, http.StatusBadRequest, "limit "+quote(v)+" is not a whole number from 1 to "+strconv.Itoa(MaxLimit))
			return p, false
		}
		p.limit = n
	}
	v := q.Get(paramCursor)
	if v == "" {
		return p, true
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	decoded := err == nil && dec.Decode(&p.after) == nil && !dec.More()
	if decoded && p.after.List != list {
		httpserver.WriteError(w, http.StatusBadRequest, "cursor "+quote(v)+" belongs to another list or filter; use it with the request that gave it")
		return p, false
	}
	if !decoded || !valid(p.after) {
		httpserver.WriteError(w, http.StatusBadRequest, "cursor "+quote(v)+" is not one this API gave; leave it out to start from the first page")
		return p, false
	}
	return p, true
}

// trim cuts rows, read with a limit one over the page's, to the page and returns the
// cursor of the next page (nil when rows end here); last is the cursor after a row.
func trim[R any](p pageRequest, rows []R, last func(R) cursor) ([]R, *string) {
	if len(rows) <= p.limit {
		return rows, nil
	}
	rows = rows[:p.limit]
	return rows, last(rows[len(rows)-1]).encode()
}
