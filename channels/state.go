package channels

import (
	"context"
	"encoding/json"
	"fmt"
)

// State is where an adapter keeps what must survive a restart (which messages carry which
// approval's buttons, an update offset), as string values under (channel, account, key).
// *store.Store implements it.
type State interface {
	ChannelState(ctx context.Context, channel, account, key string) (string, bool, error)
	// SetChannelState saves value durably.
	SetChannelState(ctx context.Context, channel, account, key, value string) error
	// SetChannelStateLazy saves value without waiting for the disk: for records whose loss
	// in an OS crash would only replay finished work, such as an inbox's handled events.
	// A process kill loses nothing either way.
	SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error
	// SetChannelStateWith saves the value that value computes when the save runs, durably
	// unless lazy, keeping the saves of one record in the order they run (on SQLite inside
	// the writer's batch, where saves of one record that share a batch are merged), so a
	// caller waits for the batch in flight and its own, not for another caller's save.
	SetChannelStateWith(ctx context.Context, channel, account, key string, lazy bool, value func() (string, error)) error
}

// LoadJSON reads the JSON record stored under key into a T. ok is false, with a nil error,
// when nothing is stored there; a record that does not decode is an error.
func LoadJSON[T any](ctx context.Context, st State, channel, account, key string) (T, bool, error) {
	var zero T
	v, ok, err := st.ChannelState(ctx, channel, account, key)
	if err != nil {
		return zero, false, fmt.Errorf("loading channel state %q: %w", key, err)
	}
	if !ok {
		return zero, false, nil
	}
	var out T
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return zero, false, fmt.Errorf("decoding channel state %q: %w", key, err)
	}
	return out, true, nil
}

// SaveJSON stores v, encoded as JSON, under key.
func SaveJSON(ctx context.Context, st State, channel, account, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding channel state %q: %w", key, err)
	}
	if err := st.SetChannelState(ctx, channel, account, key, string(data)); err != nil {
		return fmt.Errorf("saving channel state %q: %w", key, err)
	}
	return nil
}
