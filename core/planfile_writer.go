package core

import (
	"log/slog"
	"sync"
)

// The plan files: a new version's file is written before its commit (see prepare), later
// changes are rewritten in the background by a fileWriter.

// writePlanFile renders a plan as session s sees it and writes it under plansDir.
func writePlanFile(plansDir string, s Session, p Plan) (string, error) {
	return writeMarkedPlanFile(plansDir, s, p, nil)
}

// writeMarkedPlanFile is writePlanFile with the destructive tools of the plan's scope
// marked (see RenderPlanMarkdownMarked).
func writeMarkedPlanFile(plansDir string, s Session, p Plan, destructive func(string) bool) (string, error) {
	name := PlanFileName(p.CreatedAt, p.Body.Title, p.Version)
	if p.File != "" {
		name = fileBase(p.File)
	}
	return WritePlanFile(plansDir, s.Address.Dir(), name, RenderPlanMarkdownMarked(p, s.Phase, s.Address.Chat, destructive))
}

// fileWriter rewrites plan files after their status or steps changed, off the decision's
// path: writes of one file are coalesced (the newest rendering wins) and applied by a
// single goroutine. The database is the record; a failed write is logged, not fatal.
type fileWriter struct {
	dir   string
	log   *slog.Logger
	marks *toolMarks // which allowed tools are marked destructive

	mu      sync.Mutex
	pending map[string]func() // path -> the latest rewrite
	running bool
}

// refresh schedules a rewrite of p's file as session s now sees it.
func (w *fileWriter) refresh(s Session, p Plan) {
	if p.File == "" {
		return
	}
	destructive := w.marks.destructive() // now: the toolbox is not the writer's to list later
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]func(){}
	}
	w.pending[p.File] = func() {
		if _, err := writeMarkedPlanFile(w.dir, s, p, destructive); err != nil {
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
