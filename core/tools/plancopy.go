package tools

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/plangate/plangate/core"
)

// The executor's copy of the accepted plan, PLAN.md and PLAN.json at the workspace root
// (core/engine/workspace_copy.go), is the person's contract: with Config.ProtectPlanCopy the
// agent may read it but nothing it calls may change it.
//
//   - write_file and edit_file refuse the names (after cleaning, without case), and any
//     path that is the same file as one of them (a symlink or hard link to it).
//   - Under bwrap the files are bound read-only over themselves, so a command can neither
//     write them nor unlink, rename or replace them (a mount point cannot be moved).
//   - Whatever the sandbox, run_command compares the files before and after the command
//     and puts back what it changed, saying so in the result (without a sandbox nothing
//     else could stop it).

// refusePlanCopy refuses a write_file or edit_file of the copy.
func (w *workspace) refusePlanCopy(rel string) error {
	if !w.protect {
		return nil
	}
	if name, ok := core.IsPlanCopy(rel); ok {
		return core.PlanCopyRefusal(name)
	}
	target, err := w.root.Stat(rel)
	if err != nil {
		return nil // a new file: not one of the copy's
	}
	for _, name := range core.PlanCopyNames {
		if fi, err := w.root.Lstat(name); err == nil && os.SameFile(fi, target) {
			return core.PlanCopyRefusal(name)
		}
	}
	return nil
}

// copyNote tells the model that the plan's workspace copy is read-only, before it tries.
func copyNote(cfg Config) string {
	if !cfg.ProtectPlanCopy {
		return ""
	}
	return " PLAN.md and PLAN.json at the workspace root are the accepted plan: read them, never write them."
}

// copySnapshot is the copy's files as they were before a command ran.
type copySnapshot struct {
	dir   string
	files map[string][]byte // name -> content; only files that existed
}

// snapshotPlanCopy reads the copy's files in dir (nil when not protected).
func (t *Toolbox) snapshotPlanCopy(dir string) *copySnapshot {
	if !t.cfg.ProtectPlanCopy {
		return nil
	}
	s := &copySnapshot{dir: dir, files: map[string][]byte{}}
	for _, name := range core.PlanCopyNames {
		if data, ok := readCopyFile(dir, name); ok {
			s.files[name] = data
		}
	}
	return s
}

// readCopyFile reads a regular file name at the root of dir, not following a link, of at
// most core.MaxPlanCopyBytes: above any plan's copy, so the snapshot skips none. A file
// over it after a command is taken as changed and put back.
func readCopyFile(dir, name string) ([]byte, bool) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > core.MaxPlanCopyBytes {
		return nil, false
	}
	data, err := root.ReadFile(name)
	return data, err == nil
}

// restore puts back every file of the snapshot a command changed, removed or replaced,
// and returns a note for the command's result ("" when nothing changed).
func (s *copySnapshot) restore() string {
	if s == nil {
		return ""
	}
	var notes []string
	for _, name := range core.PlanCopyNames {
		want, ok := s.files[name]
		if !ok {
			continue
		}
		if got, ok := readCopyFile(s.dir, name); ok && bytes.Equal(got, want) {
			continue
		}
		note := core.PlanCopyContract(name) + ": the command changed it, and it was put back."
		if err := putBack(s.dir, name, want); err != nil {
			note = core.PlanCopyContract(name) + ": the command changed it, and putting it back failed: " + hostless(err).Error()
		}
		notes = append(notes, note)
	}
	return strings.Join(notes, "\n")
}

// putBack replaces name in dir with data, atomically; whatever the command left there
// (a directory, a link) is removed first.
func putBack(dir, name string, data []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err == nil && fi.IsDir() {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	return replaceFile(root, name, data, 0o644)
}

// protectArgs bind the copy's existing files read-only over themselves in the sandbox of
// a command in ws; they come after the workspace's own bind.
func protectArgs(ws string) []string {
	var a []string
	for _, name := range core.PlanCopyNames {
		p := filepath.Join(ws, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", p, p)
		}
	}
	return a
}

// EnsureWorkspace creates the workspace of ws as the first tool call would, seeding it
// (engine.WorkspaceEnsurer): the engine calls it before writing the plan's copy there.
func (t *Toolbox) EnsureWorkspace(ws core.Workspace) error {
	if ws.Dir == "" {
		return errors.New("no workspace directory is configured for this session")
	}
	return t.ensureWorkspace(ws.Dir)
}
