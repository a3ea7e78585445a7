package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/plangate/plangate/store"
)

const storeUsage = "plangate store check [--config F] [--full] | plangate store backup FILE [--config F] | plangate store migrate [--config F] | " + storeCopyUsage

// cmdStore is `plangate store check`, `backup FILE`, `migrate` and `copy`.
func cmdStore(ctx context.Context, args []string, e procEnv) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, storeUsage)
	}
	sub := map[string]func(context.Context, []string, procEnv) error{
		"check":   cmdStoreCheck,
		"backup":  cmdStoreBackup,
		"migrate": cmdStoreMigrate,
		"copy":    cmdStoreCopy,
	}
	if run, ok := sub[args[0]]; ok {
		return run(ctx, args[1:], e)
	}
	return fmt.Errorf("%w: unknown store command %q: %s", errUsage, args[0], storeUsage)
}

func cmdStoreCheck(ctx context.Context, args []string, e procEnv) error {
	fs := newFlags("store check")
	full := fs.Bool("full", false, "run integrity_check (slower; also checks indexes)")
	cfg, err := loadConfigFlags(fs, args, e)
	if err != nil {
		return err
	}
	if cfg.Store.postgres() {
		// PostgreSQL checks its own pages (data checksums, amcheck); there is no
		// quick_check to run: the server answers and the schema is one this plangate knows.
		pg, err := store.CheckPostgres(ctx, cfg.Store.DSN)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: ok (server %s answers, schema version %d)\n", pg.Where, pg.Server, pg.SchemaVersion)
		return nil
	}
	res, err := store.Check(ctx, cfg.Store.Path, *full)
	if errors.Is(err, store.ErrDamaged) {
		for _, p := range res.Problems {
			fmt.Fprintln(e.stdout, p)
		}
		return fmt.Errorf("%w\n%s", err, store.RecoveryHint(res.Path))
	}
	if err != nil {
		return err
	}
	what := "quick_check"
	if *full {
		what = "integrity_check"
	}
	fmt.Fprintf(e.stdout, "%s: ok (%s)\n", res.Path, what)
	return nil
}

func cmdStoreBackup(ctx context.Context, args []string, e procEnv) error {
	fs := newFlags("store backup")
	configPath := fs.String("config", "", "configuration file")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return fmt.Errorf("%w: plangate store backup FILE [--config F]: name one new file", errUsage)
	}
	cfg, err := loadConfig(*configPath, e)
	if err != nil {
		return err
	}
	if cfg.Store.postgres() {
		return errors.New("plangate store backup copies a SQLite file; store.driver is postgres: back it up with PostgreSQL's own tools, e.g. pg_dump --format=custom --file=plangate.dump DBNAME (restore with pg_restore)")
	}
	res, err := store.Backup(ctx, cfg.Store.Path, rest[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s (%d pages, schema version %d, integrity ok)\n",
		cfg.Store.Path, res.Path, res.Pages, res.SchemaVersion)
	return nil
}

// damagedError is the refusal to start on a damaged file: what is wrong, where, and how
// to recover.
func damagedError(res store.CheckResult) error {
	problems := res.Problems
	more := ""
	if len(problems) > 5 {
		more = fmt.Sprintf("\n  … and %d more (plangate store check --full lists them)", len(problems)-5)
		problems = problems[:5]
	}
	return fmt.Errorf("refusing to start: the database %s is damaged (PRAGMA quick_check):\n  %s%s\n%s",
		res.Path, strings.Join(problems, "\n  "), more, store.RecoveryHint(res.Path))
}
