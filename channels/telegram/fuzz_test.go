package telegram

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeUpdate feeds webhook bodies to the decoder: it never panics, and a body it
// accepts has a positive update_id, decodes as the dispatcher will decode it again, and
// can be stored as it came (valid JSON, also spliced into the inbox record).
func FuzzDecodeUpdate(f *testing.F) {
	for _, s := range []string{
		`{"update_id":1001,"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"text":"hi"}}`,
		`{"update_id":7,"callback_query":{"id":"q","from":{"id":1,"is_bot":false,"first_name":"a"},"data":"pg:a:x"}}`,
		`{"update_id":"5"}`, `{"update_id":1.5}`, `[]`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, u, err := decodeUpdate(body)
		if err != nil {
			return
		}
		if id <= 0 || u == nil || u.ID != id {
			t.Fatalf("accepted %q as update %d (%+v)", body, id, u)
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		if _, err := json.Marshal(struct{ P []json.RawMessage }{[]json.RawMessage{body}}); err != nil {
			t.Fatalf("an accepted update cannot be stored: %v", err)
		}
		if rec := (&savedInbox{Next: id + 1, Pending: []json.RawMessage{body}}).appendJSON(nil); !json.Valid(rec) {
			t.Fatalf("the inbox record with an accepted update is not JSON: %q", rec)
		}
	})
}
