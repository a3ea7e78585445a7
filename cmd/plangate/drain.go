package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plangate/plangate/channels"
)

// drainChannels waits for the channels to settle what they handed to the engine and
// returns how many received messages were left for the next start.
func drainChannels(chans []channels.Channel, log *slog.Logger) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	total := 0
	var errs []error
	for _, c := range chans {
		d, ok := c.(channels.Drainer)
		if !ok {
			continue
		}
		left, err := d.Drain(ctx)
		total += left
		if err != nil {
			errs = append(errs, fmt.Errorf("settling %s messages: %w", c.Name(), err))
		}
		if left > 0 {
			log.Warn("messages not handled before the stop are kept for the next start", "channel", c.Name(), "left", left)
		}
	}
	return total, errors.Join(errs...)
}
