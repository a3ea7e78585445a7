package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plangate/plangate/store"
)

// openStore opens the configured store: every command that uses the database (serve,
// chat, nudges, sessions, plans, store migrate) opens it here, so the driver is chosen in
// one place. Pending migrations are applied.
func openStore(ctx context.Context, cfg *Config) (*store.Store, error) {
	if cfg.Store.postgres() {
		return store.OpenPostgres(ctx, cfg.Store.DSN)
	}
	if err := makeStoreDir(cfg.Store.Path); err != nil {
		return nil, err
	}
	return store.Open(ctx, cfg.Store.Path)
}

// makeStoreDir creates the directory of a SQLite file.
func makeStoreDir(file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("creating the store directory: %w", err)
	}
	return nil
}

// openCheckedStore opens the store for chat and serve. A SQLite file gets PRAGMA
// quick_check first: a file with a damaged page would otherwise start and then answer
// every message "something went wrong". A missing file is created as usual. PostgreSQL
// checks its own pages; its open pings the server.
func openCheckedStore(ctx context.Context, cfg *Config) (*store.Store, error) {
	if cfg.Store.postgres() {
		return openStore(ctx, cfg)
	}
	if _, err := os.Stat(cfg.Store.Path); err == nil {
		res, err := store.Check(ctx, cfg.Store.Path, false)
		if errors.Is(err, store.ErrDamaged) {
			return nil, damagedError(res)
		}
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checking the store: %w", err)
	}
	return openStore(ctx, cfg)
}
