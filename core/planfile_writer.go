package core

// The engine's plan file writer: new versions are written before their commit (see
// prepare), later changes are rewritten in the background.

// writePlanFile renders a plan and writes it under the plans directory.
func (e *Engine) writePlanFile(s Session, p Plan) (string, error) {
	name := PlanFileName(p.CreatedAt, p.Body.Title, p.Version)
	if p.File != "" {
		name = fileBase(p.File)
	}
	return WritePlanFile(e.cfg.PlansDir, s.Address.Dir(), name, RenderPlanMarkdown(p, s.Phase, s.Address.Chat))
}

// refreshFile rewrites a plan's file after its status or steps changed. The database is
// the record; a failure here is logged, not fatal.
//
// The write happens in the background, off the decision's path: writes of one file are
// coalesced and applied in order by a single writer, and Engine.Wait waits for them.
func (e *Engine) refreshFile(s Session, p Plan) {
	if p.File == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refresh == nil {
		e.refresh = map[string]func(){}
	}
	e.refresh[p.File] = func() {
		if _, err := e.writePlanFile(s, p); err != nil {
			e.d.Log.Error("refreshing plan file", "plan", p.ID, "err", err)
		}
	}
	if !e.refreshing {
		e.refreshing = true
		go e.writeFiles()
	}
}

// writeFiles applies pending plan file refreshes until none are left.
func (e *Engine) writeFiles() {
	for {
		e.mu.Lock()
		var write func()
		for path, w := range e.refresh {
			write = w
			delete(e.refresh, path)
			break
		}
		if write == nil {
			e.refreshing = false
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		write()
	}
}
