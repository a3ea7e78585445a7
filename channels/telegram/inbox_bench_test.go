package telegram

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
)

// BenchmarkInboxEncode measures the save path of a webhook inbox that has remembered
// recentIDs updates, all handled, with one update pending (as at a webhook request's
// save): encode, which a save runs once. Reported: record-B, the stored record's size.
// in-order is Telegram's ids as they come one at a time; swapped has a fifth of the
// neighbours arriving the other way round, as concurrent deliveries do. pending=20 is
// swapped with 20 updates of BenchmarkWebhookTelegram's size pending, as its 20 senders
// keep the inbox.
func BenchmarkInboxEncode(b *testing.B) {
	b.Run("pending=20", func(b *testing.B) {
		in := filledInbox(b, 0.2)
		for i := range int64(19) {
			id := int64(712_346_000) + i
			body := []byte(`{"update_id":` + strconv.FormatInt(id, 10) + `,"message":{"chat":{"first_name":"b","id":7011,"type":"private"},"date":1700000000,"from":{"first_name":"b","id":7011,"is_bot":false},"message_id":500123,"text":"message 1234 in chat 7011"}}`)
			if !in.receiveAny(id, body) {
				b.Fatal("refused")
			}
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
	})
	for _, swap := range []float64{0, 0.2} {
		name := "in-order"
		if swap > 0 {
			name = "swapped"
		}
		b.Run(name, func(b *testing.B) {
			in := filledInbox(b, swap)
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
		})
	}
}

// filledInbox is an inbox after recentIDs+1 webhook updates, the last still pending, with
// a share swap of neighbouring ids delivered in the other order.
func filledInbox(tb testing.TB, swap float64) *inbox {
	tb.Helper()
	c := &Channel{account: "1", st: &channeltest.MemState{}}
	in, err := c.loadInbox(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int64, recentIDs+1)
	for i := range ids {
		ids[i] = int64(712_345_001 + i)
	}
	for i := 0; i+1 < len(ids)-1; i++ {
		if rng.Float64() < swap {
			ids[i], ids[i+1] = ids[i+1], ids[i]
			i++
		}
	}
	for i, id := range ids {
		raw := json.RawMessage(`{"update_id":` + strconv.FormatInt(id, 10) + `,"message":{"message_id":1,"date":1700000000,"text":"message ` + strconv.Itoa(i) + ` in chat 7000","chat":{"id":7000,"type":"private","first_name":"b"},"from":{"id":7000,"is_bot":false,"first_name":"b"}}}`)
		if !in.receiveAny(id, raw) {
			tb.Fatalf("update %d refused", id)
		}
		if i < len(ids)-1 {
			in.done(id)
		}
	}
	return in
}
