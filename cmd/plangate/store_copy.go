package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/plangate/plangate/store"
)

const storeCopyUsage = "plangate store copy --from sqlite:FILE --to postgres://USER:PASSWORD@HOST/DB (or the reverse)"

// cmdStoreCopy is `plangate store copy`: every row of one deployment's store into an
// empty store of the other driver (store.Copy), in one transaction on the target. It
// needs no config: both ends are on the command line. Stop the gateway that uses the
// source first, or the copy misses what it writes meanwhile.
func cmdStoreCopy(ctx context.Context, args []string, e procEnv) error {
	fs := newFlags("store copy")
	from := fs.String("from", "", "the store to copy: sqlite:FILE or a PostgreSQL DSN")
	to := fs.String("to", "", "the empty store to fill: a PostgreSQL DSN or sqlite:FILE")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 || *from == "" || *to == "" {
		return fmt.Errorf("%w: %s", errUsage, storeCopyUsage)
	}
	src, err := parseStoreURL(*from, true)
	if err != nil {
		return err
	}
	dst, err := parseStoreURL(*to, false)
	if err != nil {
		return err
	}
	if src == dst {
		return fmt.Errorf("%w: --from and --to name the same store", errUsage)
	}
	s, err := store.OpenDriver(ctx, src.driver, src.target)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := store.OpenDriver(ctx, dst.driver, dst.target)
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := store.Copy(ctx, d, s)
	if err != nil {
		return err
	}
	var total int64
	for _, n := range res.Rows {
		total += n
	}
	fmt.Fprintf(e.stdout, "copied %d rows from %s to %s (sessions %d, plans %d, messages %d, plan_events %d, nudges %d, outbox %d)\n",
		total, src.shown, dst.shown, res.Rows["sessions"], res.Rows["plans"], res.Rows["messages"], res.Rows["plan_events"],
		res.Rows["nudges"], res.Rows["outbox"])
	return nil
}

// storeURL is one end of a copy.
type storeURL struct {
	driver, target string
	shown          string // for messages: the file, or the database without the password
}

// parseStoreURL reads "sqlite:FILE" or a PostgreSQL DSN ("postgres://...",
// "postgresql://..." or "postgres:host=... dbname=..."). A source file must exist: opening
// a missing one would create an empty database and copy nothing.
func parseStoreURL(s string, source bool) (storeURL, error) {
	if file, ok := strings.CutPrefix(s, "sqlite:"); ok {
		if file == "" {
			return storeURL{}, fmt.Errorf("%w: sqlite: needs a file name (sqlite:plangate.db)", errUsage)
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return storeURL{}, fmt.Errorf("resolving %s: %w", file, err)
		}
		if _, err := os.Stat(abs); source && errors.Is(err, fs.ErrNotExist) {
			return storeURL{}, fmt.Errorf("copying: %s does not exist", abs)
		} else if !source && err == nil {
			return storeURL{}, fmt.Errorf("copying: %s exists: copy into a new file", abs)
		}
		if !source {
			if err := makeStoreDir(abs); err != nil {
				return storeURL{}, err
			}
		}
		return storeURL{driver: store.DriverSQLite, target: abs, shown: abs}, nil
	}
	dsn := s
	if kw, ok := strings.CutPrefix(s, "postgres:"); ok && !strings.HasPrefix(kw, "//") {
		dsn = kw // "postgres:host=... dbname=..."
	} else if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return storeURL{}, fmt.Errorf("%w: a store is sqlite:FILE or a PostgreSQL DSN (postgres://...), not %q", errUsage, redactedPrefix(s))
	}
	shown, err := store.DescribeDSN(dsn)
	if err != nil {
		return storeURL{}, fmt.Errorf("copying: %w", err)
	}
	return storeURL{driver: store.DriverPostgres, target: dsn, shown: shown}, nil
}

// redactedPrefix shows what an unrecognised store argument starts with, cut before
// anything that may be a password.
func redactedPrefix(s string) string {
	if i := strings.IndexAny(s, ":@ "); i >= 0 {
		return s[:i] + "..."
	}
	return s
}
