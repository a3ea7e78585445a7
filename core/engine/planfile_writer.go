package engine

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The plan files: a new version's file is written before its commit (see prepare), later
// changes are rewritten after it (see carryOut), both by a fileWriter.

// fileWriter writes plan files: a new version's before its commit, and a rewrite after
// its status or steps changed, after the commit, in the job that changed them (jobs of
// one session run one at a time, so rewrites of a file are in order). The database is
// the record; a failed rewrite is logged, not fatal.
type fileWriter struct {
	dir   string
	log   *slog.Logger
	marks *toolMarks    // which allowed tools are marked destructive
	reach machine.Reach // for the grants' words

	writes atomic.Int64 // plan files written (prepare's and the refreshes)
}

// write renders p as session s sees it, with the destructive tools of its scope marked,
// and writes it under w.dir now (a new version's, before its commit). A new version that
// carries its changes gets the "## Changes from vN" section; a later rewrite (p.Changes
// is not stored) keeps the section the file already has.
func (w *fileWriter) write(s core.Session, p core.Plan) (string, error) {
	name := plan.FileName(p.CreatedAt, p.Body.Title, p.Version)
	if p.File != "" {
		name = machine.FileBase(p.File)
	}
	o := machine.RenderOptions{Changes: p.Changes, Destructive: w.marks.destructive(), Reach: w.reach}
	data := machine.RenderPlan(p, s.Phase, s.Address.Chat, o)
	if p.Changes == nil && p.Version > 1 {
		data = keepChanges(readPlanFile(w.dir, s.Address.Dir(), name), data)
	}
	path, err := WritePlanFile(w.dir, s.Address.Dir(), name, data)
	if err == nil {
		w.writes.Add(1)
	}
	return path, err
}

// refresh rewrites p's file as session s now sees it.
func (w *fileWriter) refresh(s core.Session, p core.Plan) {
	if p.File == "" {
		return
	}
	if _, err := w.write(s, p); err != nil {
		w.log.Error("refreshing plan file", "plan", p.ID, "err", err)
	}
}

// readPlanFile reads plansDir/sessionDir/name through an os.Root, so no symbolic link
// takes the read outside plansDir; nil if it cannot. A plan file's name only ever moves
// to a complete new file (see WritePlanFile), so what it reads is one whole version.
func readPlanFile(plansDir, sessionDir, name string) []byte {
	root, err := os.OpenRoot(plansDir)
	if err != nil {
		return nil
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.Join(sessionDir, name))
	if err != nil {
		return nil
	}
	return b
}

// keepChanges copies the "## Changes from vN" section of the old rendering of a file into
// the new one, after the status line, where renderPlan puts it.
func keepChanges(old, fresh []byte) []byte {
	const heading = "\n## Changes from v"
	i := bytes.Index(old, []byte(heading))
	if i < 0 || bytes.Contains(fresh, []byte(heading)) {
		return fresh
	}
	section := old[i:]
	if j := bytes.Index(section[1:], []byte("\n## ")); j >= 0 {
		section = section[:j+1]
	} else if j := bytes.Index(section, []byte("\n---\n")); j >= 0 {
		section = section[:j]
	}
	at := bytes.Index(fresh, []byte("\nVersion "))
	if at < 0 {
		return fresh
	}
	end := bytes.IndexByte(fresh[at+1:], '\n')
	if end < 0 {
		return fresh
	}
	at += end + 2
	out := make([]byte, 0, len(fresh)+len(section))
	out = append(append(append(out, fresh[:at]...), section...), fresh[at:]...)
	return out
}

// toolMarks remembers which MCP tools are destructive (destructiveHint), for the mark in
// plan files. A plan file may be rewritten while the tool's server is down and its tools
// are withdrawn: the mark must not vanish then, so what a listing once said is kept until
// a later listing says otherwise.
type toolMarks struct {
	tools core.Toolbox // nil: no tools, no marks

	mu    sync.Mutex
	known map[string]bool // tool name -> destructive
}

// isDestructive reports whether tool is marked destructive, listing the tools now.
func (m *toolMarks) isDestructive(tool string) bool {
	d := m.destructive()
	return d != nil && d(tool)
}

// destructive lists the tools now and returns the marks to render with (nil: none).
func (m *toolMarks) destructive() func(string) bool {
	if m.tools == nil {
		return nil
	}
	specs := m.tools.Tools()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range specs {
		if !IsMCPTool(s.Name) {
			continue
		}
		if m.known == nil {
			m.known = map[string]bool{}
		}
		m.known[s.Name] = s.Destructive
	}
	snap := make(map[string]bool, len(m.known))
	for k, v := range m.known {
		if v {
			snap[k] = true
		}
	}
	return func(tool string) bool { return snap[tool] }
}
