package channels

import (
	"encoding/json"
	"strconv"
	"testing"
)

// BenchmarkInboxEncode measures a save's encoding of an inbox with 20 Slack mentions
// pending, as BenchmarkWebhookSlack's 20 senders keep it. Reported: record-B, its size.
func BenchmarkInboxEncode(b *testing.B) {
	in := &Inbox{channel: "slack", pending: map[string]InboxEntry{}}
	for i := range 20 {
		ts := "1700000000." + strconv.Itoa(100000+i)
		data := `{"token":"","team_id":"T0B","api_app_id":"A0B","type":"event_callback","event_id":"Ev` + ts + `","event_time":1700000000,` +
			`"event":{"type":"app_mention","user":"U0B` + strconv.Itoa(i) + `","text":"<@UBOT> message 1234 from sender ` + strconv.Itoa(i) + `","ts":"` + ts + `","channel":"C0B` + strconv.Itoa(i) + `","event_ts":"` + ts + `"}}`
		in.seq++
		in.pending["Ev"+ts] = InboxEntry{Key: "Ev" + ts, Seq: in.seq, Kind: "events_api", Data: json.RawMessage(data)}
	}
	s, err := in.encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.encode(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(s)), "record-B")
}
