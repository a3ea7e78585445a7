package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plangate/plangate/store"
)

// cmdStoreMigrate is `plangate store migrate`: apply the pending schema migrations to
// store.path and exit, so an upgrade runs (and can fail) before the service starts.
func cmdStoreMigrate(ctx context.Context, args []string, e procEnv) error {
	fs := newFlags("store migrate")
	configPath := fs.String("config", "", "configuration file")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("%w: plangate store migrate takes no arguments (got %q)", errUsage, rest[0])
	}
	cfg, err := loadConfig(*configPath, e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o755); err != nil {
		return fmt.Errorf("creating the store directory: %w", err)
	}
	res, err := store.Migrate(ctx, cfg.Store.Path)
	if err != nil {
		return err
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(e.stdout, "%s: schema version %d, up to date\n", res.Path, res.To)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: schema version %d -> %d (applied %s)\n", res.Path, res.From, res.To, strings.Join(res.Applied, ", "))
	return nil
}
