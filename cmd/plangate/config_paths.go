package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ownFilesOutsideWorkspace reports a store.path or plans.dir inside workspace.root:
// the agent's file tools may read and change everything under the root, so
// plangate's database or its plan files there would let the agent rewrite its own approvals.
// Paths are compared after resolving symbolic links as far as they exist, so a link into
// the workspace, or a workspace reached through a link, does not slip by.
func (c *Config) ownFilesOutsideWorkspace() []problem {
	root := c.Workspace.Root
	if root == "" {
		return nil // reported by the workspace section
	}
	realRoot := resolveExisting(root)
	var ps []problem
	type ownPath struct{ key, path, what string }
	var own []ownPath
	if !c.Store.postgres() {
		own = append(own, ownPath{"store.path", c.Store.Path, "plangate's database"})
	}
	own = append(own, ownPath{"plans.dir", c.Plans.Dir, "the plan files"})
	for _, own := range own {
		if own.path == "" {
			continue
		}
		real := resolveExisting(own.path)
		if !pathWithin(own.path, root) {
			continue
		}
		shown := fmt.Sprintf("%s %s is inside workspace.root %s", own.key, own.path, root)
		if !within(own.path, root) {
			shown = fmt.Sprintf("%s %s is inside workspace.root %s once symbolic links are resolved (%s in %s)",
				own.key, own.path, root, real, realRoot)
		}
		ps = append(ps, problem{own.key, shown + ": the agent's tools and commands could read and change " + own.what +
			"; put " + own.key + " outside workspace.root"})
	}
	return ps
}

// resolveExisting resolves the symbolic links of the longest part of p that exists and
// keeps the rest as written: the store file or the plans directory need not exist before
// the first start, but a linked parent directory does.
func resolveExisting(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// pathWithin reports whether p is root or lies under it, as written or once the symbolic
// links of both are resolved as far as they exist.
func pathWithin(p, root string) bool {
	return within(p, root) || within(resolveExisting(p), resolveExisting(root))
}

// within reports whether p is root or lies below it; both are absolute and clean.
func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
