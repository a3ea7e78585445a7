package slack

import (
	"context"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

func TestConformance(t *testing.T) {
	const ch = "C0CONF"
	channeltest.RunConformance(t, func(t *testing.T) channeltest.Harness {
		api := newFakeSlack(t)
		logs := &channeltest.LogBuffer{}
		t.Cleanup(func() {
			assertNoTokens(t, api, logs.String())
			if t.Failed() {
				t.Log(logs.String())
			}
		})
		cfg := Config{BotToken: api.botToken, AppToken: api.appToken, APIURL: api.URL()}
		c, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, channeltest.NewLogger(logs), testTuning())
		if err != nil {
			t.Fatal(err)
		}
		// The suite talks in one thread, the session a first mention started.
		thread := api.userTS()
		return channeltest.Harness{
			Channel: c,
			Address: core.Address{Channel: Name, Account: api.team, Chat: ch, Thread: thread},
			Sender:  "U0100",
			Inject: func(_ context.Context, sender, text string) error {
				api.mention(ch, sender, text, thread)
				return nil
			},
			Shown: func() []string {
				var out []string
				for _, m := range api.messages(ch) {
					out = append(out, m.Edits...)
					out = append(out, m.shown())
				}
				return out
			},
		}
	})
}
