package tools

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Hidden paths are plangate's own files (its database, plans directory and config file,
// Config.Hidden). The configuration check keeps them out of the workspace; should one
// lie inside it anyway, the file tools refuse it and commands see it empty.

// hiddenIn lists the hidden paths inside the workspace dir, resolved and absolute, and
// relative to the workspace, slash-separated. Hidden paths outside the workspace need no
// check here: os.Root keeps the file tools inside it.
func hiddenIn(dir string, hidden []string) (resolved, inside []string) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		realDir = dir
	}
	for _, h := range hidden {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		if rel, err := filepath.Rel(realDir, h); err == nil && filepath.IsLocal(rel) {
			resolved = append(resolved, h)
			inside = append(inside, filepath.ToSlash(rel))
		}
	}
	return resolved, inside
}

// isHidden reports whether the workspace-relative rel is, or is under, a hidden path
// inside the workspace (lexically: walks do not follow symlinks).
func (w *workspace) isHidden(rel string) bool {
	for _, h := range w.hiddenRel {
		if rel == h || strings.HasPrefix(rel, h+"/") || h == "." {
			return true
		}
	}
	return false
}

// refuseHidden refuses rel when it is, or leads through a symlink to, a hidden path.
func (w *workspace) refuseHidden(rel string) error {
	if len(w.hidden) == 0 {
		return nil
	}
	hit := w.isHidden(path.Clean(rel))
	if !hit {
		if real, err := filepath.EvalSymlinks(filepath.Join(w.dir, filepath.FromSlash(rel))); err == nil {
			for _, h := range w.hidden {
				if r, err := filepath.Rel(h, real); err == nil && filepath.IsLocal(r) {
					hit = true
				}
			}
		}
	}
	if hit {
		return fmt.Errorf("%s is one of plangate's own files (its database, plans or configuration), which the tools never touch", rel)
	}
	return nil
}

// hideArgs are bwrap's arguments that empty the hidden paths for a command in ws:
// directories become an empty tmpfs, files /dev/null. Paths inside the workspace are
// hidden after it is bound; of the others, only those under a part of the host the
// sandbox shows need hiding, before the workspace is bound, so neither covers the other.
func hideArgs(ws string, hidden []string) (before, after []string) {
	for _, h := range hidden {
		fi, err := os.Stat(h)
		if err != nil {
			continue // not created yet: nothing to see
		}
		var a []string
		switch {
		case fi.IsDir():
			a = []string{"--tmpfs", h}
		default:
			a = []string{"--ro-bind", "/dev/null", h}
		}
		switch rel, err := filepath.Rel(ws, h); {
		case err == nil && filepath.IsLocal(rel):
			after = append(after, a...)
		case visibleInSandbox(h):
			before = append(before, a...)
		default:
			// Not in the sandbox's root at all (the host's /tmp, /var, /home ...).
		}
	}
	return before, after
}

// visibleInSandbox reports whether the host path p lies in a part of the host that
// rootArgs shows a command.
func visibleInSandbox(p string) bool {
	for _, d := range append(append([]string(nil), systemDirs...), etcFiles...) {
		if rel, err := filepath.Rel(d, p); err == nil && filepath.IsLocal(rel) || p == d {
			return true
		}
	}
	return false
}
