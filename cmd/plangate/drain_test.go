package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// stubChannel is a channel that only says its name; drainingChannel is one that is a
// Drainer.
type stubChannel struct{ name string }

func (s stubChannel) Name() string                                     { return s.name }
func (s stubChannel) Run(context.Context, channels.Handler) error      { return nil }
func (s stubChannel) Send(context.Context, core.Reply) (string, error) { return "", nil }

type drainingChannel struct {
	stubChannel
	left int
	err  error
}

func (d drainingChannel) Drain(context.Context) (int, error) { return d.left, d.err }

func TestDrainChannelsCountsWhatWasLeft(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	chans := []channels.Channel{
		drainingChannel{stubChannel: stubChannel{"telegram"}, left: 2},
		stubChannel{"terminal"},
		drainingChannel{stubChannel: stubChannel{"slack"}, left: 1, err: errors.New("disk full")},
		drainingChannel{stubChannel: stubChannel{"discord"}},
	}
	left, err := drainChannels(chans, log)
	if left != 3 {
		t.Errorf("left = %d, want 3", left)
	}
	if err == nil || !strings.Contains(err.Error(), "settling slack messages: disk full") {
		t.Errorf("err = %v", err)
	}
	out := buf.String()
	for _, want := range []string{"channel=telegram left=2", "channel=slack left=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "discord") {
		t.Errorf("a channel with nothing left is logged:\n%s", out)
	}
}
