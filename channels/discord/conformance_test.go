package discord

import (
	"context"
	"testing"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
)

func TestConformance(t *testing.T) {
	channeltest.RunConformance(t, func(t *testing.T) channeltest.Harness {
		fd := newFakeDiscord(t)
		ch, err := newChannel(context.Background(), Config{Token: fd.token, APIURL: fd.URL()}, &channeltest.MemState{}, nil, testTuning())
		if err != nil {
			t.Fatal(err)
		}
		return channeltest.Harness{
			Channel: ch,
			Address: core.Address{Channel: Name, Account: "G1", Chat: "C1"},
			Sender:  "100100",
			Inject: func(_ context.Context, sender, text string) error {
				fd.say("C1", user{id: sender, name: "tester"}, text, true)
				return nil
			},
			Shown: func() []string { return contents(fd.shown("C1")) },
		}
	})
}
