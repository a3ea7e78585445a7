package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/plangate/plangate/core"
)

// Outage implements core.OutageTeller: err is a failure of the store itself, not an
// answer about the request (see IsOutage).
func (s *Store) Outage(err error) bool { return IsOutage(err) }

// IsOutage reports whether err, returned by a store call, means that the store could not
// be reached or written just now, so that the same call may succeed later:
//
//   - SQLite: a full disk (SQLITE_FULL), an I/O error (SQLITE_IOERR), the database locked
//     past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED), the file not openable or not
//     writable (SQLITE_CANTOPEN, SQLITE_READONLY: permissions or a file system remounted
//     read-only), and a failed fsync of the WAL (ENOSPC, EIO);
//   - PostgreSQL: a connection that could not be made or broke (pgconn.ConnectError, a
//     network error, an unexpected EOF, a closed connection), the server's connection
//     exceptions (class 08), insufficient resources (class 53: disk full, out of memory,
//     too many connections), operator intervention (57P01 admin shutdown, 57P02 crash
//     shutdown, 57P03 cannot connect now, 57014 a statement cancelled by a timeout), system
//     errors (class 58: I/O errors) and read-only transactions of a standby (25006);
//   - a timeout inside the driver (pgconn.Timeout).
//
// A lost compare-and-set, a duplicate, a missing row, a constraint violation, corruption
// and every other answer are not outages: they are about the request, or will not pass.
func IsOutage(err error) bool {
	if err == nil || errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrDuplicate) || errors.Is(err, core.ErrNotFound) {
		return false
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCantOpen, sqlite3.ErrReadonly:
			return true
		}
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "58"):
			return true
		}
		switch pe.Code {
		case "57P01", "57P02", "57P03", "57014", "25006":
			return true
		}
		var ce *pgconn.ConnectError
		return errors.As(err, &ce) // a server refusing the connection (too many clients, starting up)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return true
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EIO), errors.Is(err, syscall.EDQUOT),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}
