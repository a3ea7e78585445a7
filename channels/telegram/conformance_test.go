package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

// telegramIDs adapts the suite's sender names ("u100") to Telegram, whose user ids are
// numbers: the harness injects user 100 and the suite sees "u100" again.
type telegramIDs struct{ *Channel }

func (c telegramIDs) Run(ctx context.Context, h channels.Handler) error {
	return c.Channel.Run(ctx, channels.HandlerFunc(func(ctx context.Context, m core.Message) error {
		m.Sender.ID = "u" + m.Sender.ID
		return channels.Handle(ctx, h, m)
	}))
}

func TestConformance(t *testing.T) {
	const chat = int64(777)
	channeltest.RunConformance(t, func(t *testing.T) channeltest.Harness {
		api := newFakeAPI(t)
		cfg := Config{Token: api.token, APIURL: api.URL(), RequireMentionInGroups: true, PollTimeout: time.Second}
		ch, err := newChannel(context.Background(), cfg, &channeltest.MemState{}, nil, testTuning())
		if err != nil {
			t.Fatal(err)
		}
		return channeltest.Harness{
			Channel: telegramIDs{ch},
			Address: core.Address{Channel: Name, Account: strconv.FormatInt(api.botID, 10), Chat: strconv.FormatInt(chat, 10)},
			Inject: func(_ context.Context, sender, text string) error {
				id, err := strconv.ParseInt(strings.TrimPrefix(sender, "u"), 10, 64)
				if err != nil {
					return fmt.Errorf("sender %q is not u<number>", sender)
				}
				api.say(chat, user{id: id, name: sender}, text)
				return nil
			},
			Shown: func() []string {
				var out []string
				for _, m := range api.messages(chat) {
					out = append(out, m.Text)
				}
				return out
			},
		}
	})
}
