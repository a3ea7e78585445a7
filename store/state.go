package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// SeenInbound reports whether the platform event was already committed. Adapters use it
// to skip replays cheaply (the engine has SessionPlan check it in the read of the
// session); the authoritative check is Commit's ErrDuplicate.
func (s *Store) SeenInbound(ctx context.Context, key core.InboundKey) (bool, error) {
	err := checkInbound(s.r.QueryRowContext(ctx, seenInboundQuery, key.Channel, key.Account, key.EventID), key)
	if errors.Is(err, core.ErrDuplicate) {
		return true, nil
	}
	return false, err
}

const seenInboundQuery = `SELECT 1 FROM inbound WHERE channel = ? AND account = ? AND event_id = ?`

// checkInbound reads the row of seenInboundQuery: an error wrapping core.ErrDuplicate when
// the event is recorded, nil when it is not.
func checkInbound(row scanner, key core.InboundKey) error {
	var one int
	err := row.Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows): // pgx.ErrNoRows wraps it
		return nil
	case err != nil:
		return fmt.Errorf("checking inbound event %s/%s/%s: %w", key.Channel, key.Account, key.EventID, err)
	}
	return inboundDuplicate(key)
}

// PruneInbound forgets inbound event ids recorded before olderThan and returns how many
// it removed: platforms stop redelivering after a while. On SQLite it scans the table
// (an index on at costs every message's commit a page); the gateway prunes hourly.
func (s *Store) PruneInbound(ctx context.Context, olderThan time.Time) (int64, error) {
	res, err := s.execWriter(ctx, `DELETE FROM inbound WHERE at < ?`, formatTime(olderThan))
	if err != nil {
		return 0, fmt.Errorf("pruning inbound events: %w", err)
	}
	return res.RowsAffected() // both drivers count without an error
}

// ChannelState returns a value an adapter saved (e.g. the Telegram update offset), and
// whether there was one.
func (s *Store) ChannelState(ctx context.Context, channel, account, key string) (string, bool, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM channel_state WHERE channel = ? AND account = ? AND key = ?`,
		channel, account, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("loading channel state %s/%s/%s: %w", channel, account, key, err)
	}
	return v, true, nil
}

// SetChannelState saves a value for an adapter, replacing any earlier one. It is durable
// when it returns (an adapter saves its platform offset with it), and shares its
// transaction with commits in flight at the same time.
func (s *Store) SetChannelState(ctx context.Context, channel, account, key, value string) error {
	return s.setChannelState(ctx, channel, account, key, value, false)
}

// SetChannelStateLazy is SetChannelState without waiting for the disk (channels.LazyState):
// the write is committed and seen at once, and synced by the next durable commit.
func (s *Store) SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error {
	return s.setChannelState(ctx, channel, account, key, value, true)
}

func (s *Store) setChannelState(ctx context.Context, channel, account, key, value string, lazy bool) error {
	if key == "" {
		return errors.New("saving channel state: empty key")
	}
	err := s.runSteps(ctx, []step{setStateStep(channel, account, key, value, s.now())}, lazy)
	if err != nil {
		return fmt.Errorf("saving channel state %s/%s/%s: %w", channel, account, key, err)
	}
	return nil
}

// SetChannelStateWith saves the value that value returns when the write runs, durably
// unless lazy, so that a caller who changes what value reads before calling never has
// the change overwritten by an older value. On SQLite value runs inside the writer's
// batch, and of the saves of one record in a batch only the last runs (its value,
// computed last, is the newest); on PostgreSQL a store's saves run one at a time. An
// error from value fails this save alone.
func (s *Store) SetChannelStateWith(ctx context.Context, channel, account, key string, lazy bool, value func() (string, error)) error {
	if key == "" {
		return errors.New("saving channel state: empty key")
	}
	if s.pool != nil {
		s.stateMu.Lock()
		defer s.stateMu.Unlock()
		v, err := value()
		if err != nil {
			return fmt.Errorf("saving channel state %s/%s/%s: %w", channel, account, key, err)
		}
		return s.setChannelState(ctx, channel, account, key, v, lazy)
	}
	merge := "channel_state\x00" + channel + "\x00" + account + "\x00" + key
	err := s.writeMerged(ctx, lazy, merge, func(ctx context.Context, tx *sql.Conn, now time.Time) error {
		v, err := value()
		if err != nil {
			return err
		}
		return execSteps(ctx, tx, []step{setStateStep(channel, account, key, v, now)})
	})
	if err != nil {
		return fmt.Errorf("saving channel state %s/%s/%s: %w", channel, account, key, err)
	}
	return nil
}

// setStateStep is the upsert of one channel_state row.
func setStateStep(channel, account, key, value string, now time.Time) step {
	return step{what: "saving", q: `INSERT INTO channel_state (channel, account, key, value, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (channel, account, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		args: []any{channel, account, key, value, formatTime(now)}}
}

// StateKey names one channel_state row of a channel.
type StateKey struct{ Account, Key string }

// ChannelStateKeys lists the keys of channel's saved state that start with prefix, in
// order.
func (s *Store) ChannelStateKeys(ctx context.Context, channel, prefix string) ([]StateKey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT account, key FROM channel_state
		WHERE channel = ? AND key >= ? AND key < ? ORDER BY account, key`, channel, prefix, prefix+"\U0010FFFF")
	if err != nil {
		return nil, fmt.Errorf("listing channel state of %s: %w", channel, err)
	}
	return collect(rows, nil, nil, func(sc scanner) (k StateKey, err error) {
		if err := sc.Scan(&k.Account, &k.Key); err != nil {
			return k, fmt.Errorf("listing channel state of %s: %w", channel, err)
		}
		return k, nil
	})
}

// DeleteChannelState removes a saved value, durably, if it is still value (an adopted
// inbox's record, once its events are in the adopter's own: a record written again
// meanwhile is kept). false when it was changed or gone.
func (s *Store) DeleteChannelState(ctx context.Context, channel, account, key, value string) (bool, error) {
	ok, err := s.changed(ctx, false, step{what: "deleting", q: `DELETE FROM channel_state WHERE channel = ? AND account = ? AND key = ? AND value = ?`,
		args: []any{channel, account, key, value}})
	if err != nil {
		return false, fmt.Errorf("deleting channel state %s/%s/%s: %w", channel, account, key, err)
	}
	return ok, nil
}

// MoveChannelState renames the saved state from to to, in one statement, so that of two
// processes adopting the same record one gets it; false when it was no longer there. A
// value already under to is an error.
func (s *Store) MoveChannelState(ctx context.Context, channel, account, from, to string) (bool, error) {
	ok, err := s.changed(ctx, false, step{what: "moving", q: `UPDATE channel_state SET key = ?, updated_at = ?
		WHERE channel = ? AND account = ? AND key = ?`,
		args: []any{to, formatTime(s.now()), channel, account, from}})
	if err != nil {
		return false, fmt.Errorf("moving channel state %s/%s/%s: %w", channel, account, from, err)
	}
	return ok, nil
}
