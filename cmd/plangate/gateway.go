package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// gateway is the engine and the nudge scheduler running over one store: what `chat` and
// `serve` share.
type gateway struct {
	eng       *core.Engine
	sched     *nudges.Scheduler
	why       string // which model is in use, for the start-up line
	schedDone chan error
	stopSched context.CancelFunc
	log       *slog.Logger
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
func startGateway(ctx context.Context, cfg *Config, e procEnv, log *slog.Logger, st *store.Store, out core.Sender) (*gateway, error) {
	model, why, err := newModel(cfg, e, log)
	if err != nil {
		return nil, err
	}
	toolbox, err := newToolbox(cfg)
	if err != nil {
		return nil, err
	}
	for _, n := range toolbox.Notices() {
		log.Warn(n) // run_command unavailable, or running without a sandbox
	}
	ref := &nudgerRef{}
	eng := core.NewEngine(engineConfig(cfg), core.Deps{Store: st, Model: model, Tools: toolbox, Out: out, Nudger: ref, Log: log, Now: e.now,
		NudgeSpecs: nudges.Specs{}})
	sched := nudges.New(st, eng, nudges.Config{Grace: cfg.PlanMode.NudgeGrace, Now: e.now}, log)
	ref.s = sched
	// The scheduler outlives the receiving side: it stops only after in-flight work ends.
	schedCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g := &gateway{eng: eng, sched: sched, why: why, schedDone: make(chan error, 1), stopSched: stop, log: log}
	go func() { g.schedDone <- sched.Run(schedCtx) }()
	go pruneInbound(schedCtx, st, e.now, log)
	return g, nil
}

// resume picks up the work a previous process left unfinished in the sessions mine
// selects, and logs what it did.
func (g *gateway) resume(ctx context.Context, mine func(core.Session) bool) {
	n, err := g.eng.Resume(ctx, mine)
	if err != nil {
		g.log.Error("resuming unfinished work", "err", err)
	} else if n > 0 {
		g.log.Info("resumed unfinished work", "sessions", n)
	}
}

// inboundKept is how long platform event ids are kept for de-duplication (DESIGN.md
// section 8: 48h); platforms redeliver within minutes.
const inboundKept = 48 * time.Hour

// pruneInbound drops old de-duplication rows at start-up and then hourly.
func pruneInbound(ctx context.Context, st *store.Store, now func() time.Time, log *slog.Logger) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if n, err := st.PruneInbound(ctx, now().Add(-inboundKept)); err != nil {
			if ctx.Err() == nil {
				log.Warn("pruning handled event ids", "err", err)
			}
		} else if n > 0 {
			log.Debug("pruned handled event ids", "rows", n)
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
	return errors.Join(errs...)
}

// workHandler hands messages to the engine under a context that outlives receiving, so a
// shutdown stops taking new messages but lets accepted ones finish.
type workHandler struct {
	eng *core.Engine
	ctx context.Context
}

func (w workHandler) Handle(_ context.Context, m core.Message) error { return w.eng.Handle(w.ctx, m) }

func (w workHandler) Enqueue(_ context.Context, m core.Message) <-chan error {
	return w.eng.Enqueue(w.ctx, m)
}
