package slack

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/plangate/plangate/channels"
)

// fuzzDecoder checks one request decoder: it never panics, and what it accepts (other
// than the url_verification answer) is stored and replayed as Socket Mode's envelopes
// are: the saved payload decodes again into the same kind.
func fuzzDecoder(t *testing.T, dec decoder, body []byte) {
	got, err := dec(body, http.Header{"X-Slack-Retry-Num": {"1"}})
	if err != nil || got.reply != nil {
		return
	}
	if got.evt.Request == nil || got.evt.Data == nil {
		t.Fatalf("accepted %q without a request or data", body)
	}
	it, err := decodeEntry(channels.InboxEntry{Key: "k", Kind: string(got.evt.Type), Data: got.evt.Request.Payload})
	if err != nil {
		t.Fatalf("accepted %q, but its stored form does not replay: %v", body, err)
	}
	if it.kind != got.evt.Type {
		t.Fatalf("replayed as %s, received as %s", it.kind, got.evt.Type)
	}
}

func FuzzDecodeEvents(f *testing.F) {
	for _, s := range []string{
		`{"type":"url_verification","challenge":"abc","token":"t"}`,
		`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","user":"U1","text":"<@UBOT> hi","ts":"1.2","channel":"C1"}}`,
		`{"type":"event_callback","event":{"type":"message","channel_type":"im","user":"U1","text":"x","ts":"1.3","channel":"D1"}}`,
		`{"type":"app_rate_limited","minute_rate_limited":1}`, `{"type":"event_callback","event":7}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzDecoder(t, decodeEvents, body) })
}

func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		"command=%2Fplan&text=status&channel_id=C1&user_id=U1&team_id=T1&trigger_id=tr1",
		"command=%2Fplan&text=&trigger_id=", "text=no+command", "%zz", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzDecoder(t, decodeCommand, body) })
}

func FuzzDecodeInteraction(f *testing.F) {
	for _, s := range []string{
		`{"type":"block_actions","trigger_id":"t1","user":{"id":"U1"},"channel":{"id":"C1"},"actions":[{"action_id":"plan_accept","value":"a1"}]}`,
		`{"type":"view_submission","trigger_id":"t2","view":{"callback_id":"revise","state":{"values":{}}}}`,
		`{"type":""}`, `[]`, `{`,
	} {
		f.Add([]byte("payload=" + url.QueryEscape(s)))
	}
	f.Add([]byte("nothing=here"))
	f.Fuzz(func(t *testing.T, body []byte) { fuzzDecoder(t, decodeInteraction, body) })
}
