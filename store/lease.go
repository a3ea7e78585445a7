package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// AcquireLease takes or renews the lease called name for owner until now+ttl: when nobody
// holds it, owner does, or the holder let it expire. Refused, it returns the current
// holder and its lease's end, so a refusal can say who is working. The check and the
// write are one statement, so two processes never both win.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if name == "" || owner == "" {
		return core.Lease{}, false, errors.New("acquiring lease: empty name or owner")
	}
	if ttl <= 0 {
		return core.Lease{}, false, fmt.Errorf("acquiring lease %s: ttl %v is not positive", name, ttl)
	}
	until := now.Add(ttl)
	// Not fsynced: other processes see the row at once, and an OS crash, the only way to
	// lose it, ends every holder anyway. Turns take and renew leases often.
	ok, err := s.changed(ctx, true, step{what: "writing the lease",
		q: `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`,
		args: []any{name, owner, formatTime(until), formatTime(now)}})
	switch {
	case err != nil:
		return core.Lease{}, false, fmt.Errorf("acquiring lease %s: %w", name, explain(err))
	case ok:
		return core.Lease{Name: name, Owner: owner, ExpiresAt: until}, true, nil
	}
	held, err := s.lease(ctx, s.w, name) // another holder's live lease refused the write
	return held, false, err
}

// ReleaseLease ends owner's lease called name; releasing a lease held by someone else, or
// none, changes nothing.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := s.runSteps(ctx, []step{{what: "deleting the lease", q: `DELETE FROM leases WHERE name = ? AND owner = ?`, args: []any{name, owner}}}, true); err != nil {
		return fmt.Errorf("releasing lease %s: %w", name, explain(err))
	}
	return nil
}

// Lease returns the lease called name as stored (expired or not), or core.ErrNotFound.
func (s *Store) Lease(ctx context.Context, name string) (core.Lease, error) {
	return s.lease(ctx, s.r, name)
}

func (s *Store) lease(ctx context.Context, db sqlDB, name string) (core.Lease, error) {
	l, err := scanLease(db.QueryRowContext(ctx, `SELECT name, owner, expires_at FROM leases WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return core.Lease{}, core.ErrNotFound
	}
	if err != nil {
		return core.Lease{}, fmt.Errorf("loading lease %s: %w", name, err)
	}
	return l, nil
}

// scanLease reads a row of (name, owner, expires_at).
func scanLease(sc scanner) (l core.Lease, err error) {
	var until string
	if err := sc.Scan(&l.Name, &l.Owner, &until); err != nil {
		return l, err
	}
	l.ExpiresAt, err = parseTime(until, "lease expiry")
	return l, err
}

// ExpiredLeases lists the leases whose holder let them lapse before now, with the given
// name prefix (e.g. "session:"), so a process can take over work a crashed one left.
func (s *Store) ExpiredLeases(ctx context.Context, prefix string, now time.Time) ([]core.Lease, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, owner, expires_at FROM leases
		WHERE name >= ? AND name < ? AND expires_at <= ? ORDER BY name`, prefix, prefix+"\U0010FFFF", formatTime(now))
	if err != nil {
		return nil, fmt.Errorf("listing expired leases: %w", err)
	}
	return collect(rows, nil, nil, func(sc scanner) (core.Lease, error) {
		l, err := scanLease(sc)
		if err != nil {
			return l, fmt.Errorf("listing expired leases: %w", err)
		}
		return l, nil
	})
}
