package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/plangate/plangate/core"
)

// Leases are decided by the database's clock. On PostgreSQL, which several hosts share, a
// lease is written as ending ttl after the database's now() and is expired once the
// database's now() has reached that end: the statement itself reads the clock, so a replica
// whose clock is minutes off neither takes a live lease nor writes one that lasts too long.
// A SQLite file has one host, whose clock is the caller's now.
//
// A returned lease's ExpiresAt is on the caller's clock: the stored end's distance from the
// database's now, added to the now the caller passed. For a lease just taken or renewed
// that is now+ttl, which is when its holder must stop: the caller read now before the
// statement ran, so that moment is never after the stored end (the holder stops early,
// never late; measured by its own monotonic clock, a jump of its wall clock changes
// nothing). For a lease read, it is when the lease ends as seen from the caller; only
// AcquireLease's conditional write decides who holds it.

// pgNow is PostgreSQL's now(), in the text of TimeLayout (microseconds, then three zeros),
// so stored times compare as text with it. now() is the transaction's start, which comes
// after the caller's now.
const pgNow = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"000Z"')`

// pgNowPlus is pgNow plus a placeholder's seconds.
const pgNowPlus = `to_char((now() + make_interval(secs => ?::float8)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"000Z"')`

// dbTime is SQL for the database's now plus after, as stored text, and its argument: on
// PostgreSQL its own clock, on SQLite the caller's now.
func (s *Store) dbTime(now time.Time, after time.Duration) (string, any) {
	if s.w.d.pg {
		if after == 0 {
			return pgNow, nil
		}
		return pgNowPlus, after.Seconds()
	}
	return "?", formatTime(now.Add(after))
}

// AcquireLease takes or renews the lease called name for owner for ttl: when nobody holds
// it, owner does, or the holder let it expire, by the database's clock. The returned
// lease ends at now+ttl (the caller's clock). Refused, it returns the current holder and
// its lease's end, so a refusal can say who is working. The check and the write are one
// statement, so two processes never both win.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (core.Lease, bool, error) {
	if name == "" || owner == "" {
		return core.Lease{}, false, errors.New("acquiring lease: empty name or owner")
	}
	if ttl <= 0 {
		return core.Lease{}, false, fmt.Errorf("acquiring lease %s: ttl %v is not positive", name, ttl)
	}
	args := []any{name, owner}
	until, arg := s.dbTime(now, ttl)
	if arg != nil {
		args = append(args, arg)
	}
	at, arg := s.dbTime(now, 0)
	if arg != nil {
		args = append(args, arg)
	}
	// A refusal reads who holds the lease in a second statement, and the holder may
	// release it in between: then the lease is free, and the write is tried again.
	for try := 0; ; try++ {
		// Not fsynced: other processes see the row at once, and an OS crash, the only way
		// to lose it, ends every holder anyway. Turns take and renew leases often.
		ok, err := s.changed(ctx, true, step{what: "writing the lease",
			q: `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ` + until + `)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE leases.owner = excluded.owner OR leases.expires_at <= ` + at,
			args: args})
		switch {
		case err != nil:
			return core.Lease{}, false, fmt.Errorf("acquiring lease %s: %w", name, explain(err))
		case ok:
			return core.Lease{Name: name, Owner: owner, ExpiresAt: now.Add(ttl)}, true, nil
		}
		held, err := s.lease(ctx, s.w, name, now) // another holder's live lease refused the write
		if errors.Is(err, core.ErrNotFound) && try < maxLeaseTries && ctx.Err() == nil {
			continue // released meanwhile
		}
		if err != nil {
			return core.Lease{}, false, fmt.Errorf("acquiring lease %s: reading its holder: %w", name, err)
		}
		return held, false, nil
	}
}

// maxLeaseTries bounds AcquireLease's writes after a holder released the lease between a
// refused write and the read of who holds it. Two processes taking and releasing one
// lease in lockstep can meet that several times in a row; a hundred times is contention
// worth an error.
const maxLeaseTries = 100

// ReleaseLease ends owner's lease called name; releasing a lease held by someone else, or
// none, changes nothing.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := s.runSteps(ctx, []step{{what: "deleting the lease", q: `DELETE FROM leases WHERE name = ? AND owner = ?`, args: []any{name, owner}}}, true); err != nil {
		return fmt.Errorf("releasing lease %s: %w", name, explain(err))
	}
	return nil
}

// Lease returns the lease called name as stored (expired or not), its end on the clock of
// now, or core.ErrNotFound.
func (s *Store) Lease(ctx context.Context, name string, now time.Time) (core.Lease, error) {
	return s.lease(ctx, s.r, name, now)
}

func (s *Store) lease(ctx context.Context, db sqlDB, name string, now time.Time) (core.Lease, error) {
	at, arg := s.dbTime(now, 0)
	args := []any{name}
	if arg != nil {
		args = []any{arg, name}
	}
	l, err := scanLease(db.QueryRowContext(ctx, `SELECT name, owner, expires_at, `+at+` FROM leases WHERE name = ?`, args...), now)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Lease{}, core.ErrNotFound
	}
	if err != nil {
		return core.Lease{}, fmt.Errorf("loading lease %s: %w", name, err)
	}
	return l, nil
}

// scanLease reads a row of (name, owner, expires_at, the database's now) and puts the
// lease's end on the clock of now.
func scanLease(sc scanner, now time.Time) (l core.Lease, err error) {
	var until, at string
	if err := sc.Scan(&l.Name, &l.Owner, &until, &at); err != nil {
		return l, err
	}
	end, err := parseTime(until, "lease expiry")
	if err != nil {
		return l, err
	}
	dbNow, err := parseTime(at, "the database's time")
	if err != nil {
		return l, err
	}
	l.ExpiresAt = now.Add(end.Sub(dbNow))
	return l, nil
}

// Leases lists the leases with the given name prefix (e.g. "session:"), expired or not,
// each ending on the clock of now, so a process can take over work a crashed one left.
func (s *Store) Leases(ctx context.Context, prefix string, now time.Time) ([]core.Lease, error) {
	at, arg := s.dbTime(now, 0)
	args := []any{prefix, prefix + "\U0010FFFF"}
	if arg != nil {
		args = append([]any{arg}, args...)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT name, owner, expires_at, `+at+` FROM leases
		WHERE name >= ? AND name < ? ORDER BY name`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing leases: %w", err)
	}
	return collect(rows, nil, nil, func(sc scanner) (core.Lease, error) {
		l, err := scanLease(sc, now)
		if err != nil {
			return l, fmt.Errorf("listing leases: %w", err)
		}
		return l, nil
	})
}
