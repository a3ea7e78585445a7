package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/mcp"
	"github.com/plangate/plangate/core/secrets"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// gateway is the engine and the nudge scheduler running over one store: what `chat` and
// `serve` share.
type gateway struct {
	eng       *engine.Engine
	why       string // which model is in use, for the start-up line
	schedDone chan error
	stopSched context.CancelFunc
	log       *slog.Logger

	served       []string
	outboxMaxAge time.Duration
	mcp          *mcp.Manager // nil without tools.mcp
}

// unsent lists the replies a killed process committed and never sent (of the sessions
// only selects; nil = all). It runs before anything new is received, so no reply of this
// process is among them; delivering them (Backlog.Deliver, oldest first) may then run
// beside new messages, so per-chat pacing of a long backlog does not hold up receiving.
func (g *gateway) unsent(ctx context.Context, only func(sessionID string) bool) engine.Backlog {
	b, err := g.eng.Unsent(ctx, g.served, g.outboxMaxAge, only)
	if err != nil {
		g.log.Error("listing replies left unsent", "err", err)
	}
	return b
}

// nudgerRef breaks the cycle between the engine (which tells the scheduler about changed
// schedules) and the scheduler (which delivers through the engine).
type nudgerRef struct{ s *nudges.Scheduler }

func (r *nudgerRef) SessionChanged(ctx context.Context, sessionID string) {
	if r.s != nil {
		r.s.SessionChanged(ctx, sessionID)
	}
}

// startGateway builds the model, tools, engine and scheduler and starts the scheduler.
// out is where replies go (the channels' Hub).
// served names the channels this process serves: only their reminders are claimed here,
// and only their unsent replies are delivered at start (see deliverUnsent).
// obs, when not nil, is told what the engine does (serve's /metrics).
func startGateway(ctx context.Context, cfg *Config, e procEnv, log *slog.Logger, st *store.Store, out core.Sender, served []string, obs engine.Observer) (*gateway, error) {
	model, why, err := newModel(cfg, e, log)
	if err != nil {
		return nil, err
	}
	scanner, err := secrets.New() // what the agent writes and its commands print (engine/guards.go)
	if err != nil {
		return nil, err
	}
	toolbox, err := newToolbox(cfg, scanner)
	if err != nil {
		return nil, err
	}
	for _, n := range toolbox.Notices() {
		log.Warn(n) // run_command unavailable, or running without a sandbox
	}
	var tools core.Toolbox = toolbox
	mgr, err := startMCP(ctx, cfg, e.now, log)
	if err != nil {
		return nil, err
	}
	if mgr != nil {
		tools = engine.CombineToolboxes(toolbox, mgr)
	}
	ref := &nudgerRef{}
	ec := engineConfig(cfg)
	provider, _ := cfg.ResolvedProvider(e.getenv)
	ec.Stream = cfg.LLM.Streams(provider)
	eng := engine.NewEngine(ec, engine.Deps{Store: st, Model: model, Tools: tools, Checks: toolbox, Secrets: scanner, Out: out, Nudger: ref, Log: log, Now: e.now,
		NudgeSpecs: nudges.Specs{}, Observer: obs})
	eng.CountPending(ctx) // the gauge starts from the store, not from zero
	sched := nudges.New(st, eng, nudges.Config{Grace: cfg.PlanMode.NudgeGrace, Now: e.now, Channels: served}, log)
	ref.s = sched
	// The scheduler outlives the receiving side: it stops only after in-flight work ends.
	schedCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g := &gateway{eng: eng, why: why, schedDone: make(chan error, 1), stopSched: stop, log: log,
		served: served, outboxMaxAge: cfg.Channels.OutboxMaxAge, mcp: mgr}
	go func() { g.schedDone <- sched.Run(schedCtx) }()
	go prune(schedCtx, st, e.now, cfg.Store.Retention.retention(cfg.Channels.OutboxMaxAge), obs, log)
	go eng.RetryLoop(schedCtx, served, cfg.Channels.OutboxMaxAge, 0) // failed sends, while running
	return g, nil
}

// resume picks up the work a previous process left unfinished in the sessions mine
// selects, and logs what it did.
// The resumed turns are queued at once (before anything new is received, so a message
// that arrives next runs after them); the returned func waits for them.
func (g *gateway) resume(ctx context.Context, mine func(core.Session) bool) (wait func()) {
	done, err := g.eng.StartResume(ctx, mine)
	if err != nil {
		g.log.Error("resuming unfinished work", "err", err)
		return func() {}
	}
	return func() {
		if n := done(); n > 0 {
			g.log.Info("resumed unfinished work", "sessions", n)
		}
	}
}

// toolRunsKept is how long finished tool runs are kept for post-mortems.
const toolRunsKept = 7 * 24 * time.Hour

// pruneEvery is how often serve prunes; store.DefaultPruneBatch and prunePause bound its hold
// on the writer: 100 rows by key a transaction, and a pause for other writers between.
const (
	pruneEvery = time.Hour
	prunePause = 10 * time.Millisecond
)

// pruneObserver counts pruned rows (core/metrics.Metrics, for /metrics).
type pruneObserver interface{ StorePruned(table string, rows int) }

// prune deletes, at start-up and then hourly, what store.retention no longer keeps (in
// batches, see store.Prune) and old finished tool runs, and logs what it removed.
func prune(ctx context.Context, st *store.Store, now func() time.Time, keep store.Retention, obs engine.Observer, log *slog.Logger) {
	opt := store.PruneOptions{Batch: store.DefaultPruneBatch, Pause: prunePause}
	if o, ok := obs.(pruneObserver); ok {
		opt.AfterBatch = func(b store.PruneBatch) { o.StorePruned(b.Table, b.Rows) }
	}
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	for {
		t := now()
		p, err := st.Prune(ctx, keep, t, opt)
		if err != nil {
			warnLive(ctx, log, err, "pruning old rows")
		}
		if p.Total() > 0 {
			log.Info("pruned old rows", "transcripts", p.Transcripts, "outbox", p.Outbox, "inbound", p.Inbound, "audit", p.Audit)
		}
		if n, err := st.PruneToolRuns(ctx, t.Add(-toolRunsKept)); err != nil {
			warnLive(ctx, log, err, "pruning tool runs")
		} else if n > 0 {
			log.Debug("pruned finished tool runs", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// shutdown waits up to grace for queued and running turns, then stops the scheduler. It
// reports turns that had to be interrupted.
func (g *gateway) shutdown(grace time.Duration, interrupt context.CancelFunc) error {
	wctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var errs []error
	if err := g.eng.Wait(wctx); err != nil {
		g.log.Warn("interrupting agent turns that did not finish in time", "grace", grace)
		if interrupt != nil {
			interrupt()
		}
		ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := g.eng.Wait(ictx); err != nil {
			errs = append(errs, fmt.Errorf("waiting for interrupted turns: %w", err))
		}
		icancel()
	}
	g.stopSched()
	if err := <-g.schedDone; err != nil {
		errs = append(errs, fmt.Errorf("nudge scheduler: %w", err))
	}
	if g.mcp != nil {
		if err := g.mcp.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stopping MCP servers: %w", err))
		}
	}
	return errors.Join(errs...)
}

// startMCP starts the configured MCP servers (none: nil). A server that fails to start is
// logged and retried with backoff; its tools appear once it is up. The servers outlive
// receiving (ctx ends at SIGTERM): turns still running in the grace period use them, and
// shutdown stops them after the turns. now dates their states (/readyz says since when a
// server is down).
func startMCP(ctx context.Context, cfg *Config, now func() time.Time, log *slog.Logger) (*mcp.Manager, error) {
	if len(cfg.Tools.MCP) == 0 {
		return nil, nil
	}
	mgr, err := mcp.New(cfg.Tools.MCP, mcp.Options{Log: log, Version: version, Now: now})
	if err != nil {
		return nil, err
	}
	if err := mgr.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("starting MCP servers: %w", err)
	}
	log.Info("mcp servers", "status", mgr.Status())
	return mgr, nil
}

// workHandler hands messages to the engine under a context that outlives receiving, so a
// shutdown stops taking new messages but lets accepted ones finish.
type workHandler struct {
	eng *engine.Engine
	ctx context.Context
}

// Enqueue is adminapi.Engine's.
func (w workHandler) Enqueue(_ context.Context, m core.Message) <-chan error {
	return w.eng.Enqueue(w.ctx, m)
}

// EnqueueThen is channels.Handler's.
func (w workHandler) EnqueueThen(_ context.Context, m core.Message, then func(error)) {
	w.eng.EnqueueThen(w.ctx, m, then)
}
