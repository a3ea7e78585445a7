package core

import (
	"context"
	"log/slog"
	"sync"
)

// The plan files: a new version's file is written before its commit (see prepare), later
// changes are rewritten in the background by a fileWriter.

// writePlanFile renders a plan as session s sees it and writes it under plansDir. prev is
// the version p answers (nil for a first version): the file then says what changed.
func writePlanFile(plansDir string, s Session, p Plan, prev *Plan) (string, error) {
	name := PlanFileName(p.CreatedAt, p.Body.Title, p.Version)
	if p.File != "" {
		name = fileBase(p.File)
	}
	body := RenderPlanMarkdown(p, s.Phase, s.Address.Chat)
	if prev != nil {
		d := DiffPlans(prev.Body, p.Body)
		d.From = prev.Version
		body = RenderPlanMarkdownChanges(p, s.Phase, s.Address.Chat, d)
	}
	return WritePlanFile(plansDir, s.Address.Dir(), name, body)
}

// previousVersion loads the version before p when p answers it (see prevIfRevised): a
// version after one that was completed, aborted or abandoned starts afresh. A store that
// cannot say is logged; the file is then written without its changes.
func previousVersion(ctx context.Context, st Store, log *slog.Logger, p Plan) *Plan {
	if p.Version <= 1 || st == nil {
		return nil
	}
	plans, err := st.Plans(ctx, p.SessionID)
	if err != nil {
		log.Error("loading the previous plan version", "plan", p.ID, "err", err)
		return nil
	}
	for _, q := range plans {
		if q.Version == p.Version-1 {
			return prevIfRevised(&q)
		}
	}
	return nil
}

// fileWriter rewrites plan files after their status or steps changed, off the decision's
// path: writes of one file are coalesced (the newest rendering wins) and applied by a
// single goroutine. The database is the record; a failed write is logged, not fatal.
type fileWriter struct {
	dir string
	log *slog.Logger
	st  Store // for the version before a plan, whose changes its file lists

	mu      sync.Mutex
	pending map[string]func() // path -> the latest rewrite
	running bool
}

// refresh schedules a rewrite of p's file as session s now sees it.
func (w *fileWriter) refresh(s Session, p Plan) {
	if p.File == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]func(){}
	}
	w.pending[p.File] = func() {
		prev := previousVersion(context.Background(), w.st, w.log, p)
		if _, err := writePlanFile(w.dir, s, p, prev); err != nil {
			w.log.Error("refreshing plan file", "plan", p.ID, "err", err)
		}
	}
	if !w.running {
		w.running = true
		go w.run()
	}
}

// busy reports whether rewrites are pending or running (Engine.Wait waits for them).
func (w *fileWriter) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// run applies pending rewrites until none are left.
func (w *fileWriter) run() {
	for {
		w.mu.Lock()
		var write func()
		for path, f := range w.pending {
			write = f
			delete(w.pending, path)
			break
		}
		if write == nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		write()
	}
}

// progressIDs remembers the platform message id of each plan's checklist, so progress is
// one message edited in place. It is a presentation detail: after a restart the next
// checklist is a new message.
type progressIDs struct {
	mu  sync.Mutex
	ids map[string]string
}

func (p *progressIDs) get(planID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[planID]
}

func (p *progressIDs) set(planID, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]string{}
	}
	p.ids[planID] = id
}

func (p *progressIDs) forget(planID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, planID)
}
