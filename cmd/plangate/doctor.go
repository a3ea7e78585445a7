package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/plangate/plangate/channels/discord"
	"github.com/plangate/plangate/channels/slack"
	"github.com/plangate/plangate/channels/telegram"
	"github.com/plangate/plangate/core/llm"
	"github.com/plangate/plangate/core/tools"
)

// doctorTimeout bounds each probe: one unreachable platform must not hide the rest.
const doctorTimeout = 15 * time.Second

// cmdDoctor checks what the configuration points at, one line each: the store, the
// model(s), the command sandbox, and the platform token of every enabled channel, and
// exits 1 when any check failed. It sends no message and creates no SQLite file.
func cmdDoctor(ctx context.Context, args []string, e procEnv) error {
	cfg, err := loadConfigFlags(newFlags("doctor"), args, e)
	if err != nil {
		return err
	}
	return probeAll(ctx, cfg, e)
}

// probeAll is doctor's checks of cfg (also `config check --probe`).
func probeAll(ctx context.Context, cfg *Config, e procEnv) error {
	failed := 0
	report := func(what string, detail string, err error) {
		if err != nil {
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %v\n", what, err)
			return
		}
		fmt.Fprintf(e.stdout, "ok   %s: %s\n", what, detail)
	}
	probe := func(what string, f func(ctx context.Context) (string, error)) {
		pctx, cancel := context.WithTimeout(ctx, doctorTimeout)
		defer cancel()
		detail, err := f(pctx)
		report(what, detail, err)
	}
	report("config", cfg.file, nil)
	probe("store", func(ctx context.Context) (string, error) { return doctorStore(ctx, cfg) })
	probe("model", func(ctx context.Context) (string, error) { return doctorModel(ctx, cfg, e) })
	if rc := cfg.Tools.RunCommand; rc.Enabled && rc.Sandbox != "none" {
		err := tools.CheckSandbox("", rc.Network)
		report("sandbox", "bubblewrap starts a sandbox for run_command", err)
	}
	ch := &cfg.Channels
	if ch.Telegram.Enabled {
		probe("telegram", func(ctx context.Context) (string, error) { return telegram.Probe(ctx, ch.Telegram) })
	}
	if ch.Slack.Enabled {
		probe("slack", func(ctx context.Context) (string, error) { return slack.Probe(ctx, ch.Slack) })
	}
	if ch.Discord.Enabled {
		probe("discord", func(context.Context) (string, error) { return discord.Probe(ch.Discord) })
	}
	if failed > 0 {
		return fmt.Errorf("%d of the checks failed", failed)
	}
	return nil
}

// doctorStore opens the configured store as chat and serve do (a SQLite file is checked
// for damage; pending migrations are applied); a SQLite file that does not exist yet is
// reported, not created.
func doctorStore(ctx context.Context, cfg *Config) (string, error) {
	what := "sqlite " + cfg.Store.Path
	if cfg.Store.postgres() {
		what = "postgresql"
	} else if _, err := os.Stat(cfg.Store.Path); errors.Is(err, fs.ErrNotExist) {
		return what + " does not exist yet; chat and serve create it", nil
	}
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		return "", err
	}
	if err := st.Close(); err != nil {
		return "", err
	}
	return what + " opens", nil
}

// doctorModel probes the configured model provider: the script parses, or the OpenAI
// endpoint has every configured model.
func doctorModel(ctx context.Context, cfg *Config, e procEnv) (string, error) {
	m, why, err := newModel(cfg, e, nil)
	if err != nil {
		return "", err
	}
	o, ok := m.(*llm.OpenAI)
	if !ok {
		return why, nil
	}
	lines, err := o.Probe(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (%s)", strings.Join(lines, ", "), why), nil
}
