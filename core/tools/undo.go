package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Restore is /plan undo's work on the disk (core.Restorer). It first looks at every path
// — as tree left has it now? its state in tree was kept? — and writes nothing unless all
// pass. Then it removes what the execution created and writes back what it changed or
// removed: each file is written under a fresh name beside its place, given its mode and
// renamed over the path, so a symlink found there is replaced, never followed. Every
// access goes through an os.Root on the workspace; a path that leads outside it (a
// directory swapped for a link since) counts as changed.
func (t *Toolbox) Restore(ctx context.Context, ws core.Workspace, was, left *plan.Tree, paths []string) (plan.Restore, error) {
	var r plan.Restore
	wf, lf, err := byPaths(was, left)
	if err != nil {
		return r, err
	}
	root, err := t.openWorkspace(ws)
	if err != nil {
		return r, err
	}
	defer root.Close()
	w := &workspace{root: root, dir: ws.Dir}
	var puts []restoreStep
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		want, inLeft := lf[p]
		now, exists, err := w.stateOf(ctx, p)
		if err != nil {
			return r, err
		}
		if exists != inLeft || (exists && !sameState(now, want)) {
			r.Changed = append(r.Changed, p)
			continue
		}
		orig, had := wf[p]
		pb := restoreStep{path: p, had: had, inLeft: inLeft, mode: orig.Mode}
		if had {
			data, link, ok := t.kept(orig)
			if !ok {
				r.Unkept = append(r.Unkept, p)
				continue
			}
			pb.data, pb.link = data, link
		}
		puts = append(puts, pb)
	}
	if len(r.Changed) > 0 || len(r.Unkept) > 0 {
		return r, nil
	}
	// Removals first, deepest first: a file the execution created may stand where a
	// directory it removed was.
	slices.SortStableFunc(puts, func(a, b restoreStep) int {
		switch {
		case a.had != b.had:
			if !a.had {
				return -1
			}
			return 1
		case !a.had:
			return strings.Count(b.path, "/") - strings.Count(a.path, "/")
		}
		return 0
	})
	for _, pb := range puts {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		action, err := w.put(pb, wf)
		if err != nil {
			return r, fmt.Errorf("putting back %s: %w", pb.path, hostless(err))
		}
		r.Files = append(r.Files, plan.UndoneFile{Path: pb.path, Action: action})
	}
	return r, nil
}

// restoreStep is one path to put back: its content at acceptance (data, or a link's target
// when link), its mode, whether it existed then (had) and when the execution ended (inLeft).
type restoreStep struct {
	path        string
	had, inLeft bool
	link        bool
	data        []byte
	mode        fs.FileMode
}

// byPaths maps the paths of trees a and b to their files.
func byPaths(a, b *plan.Tree) (map[string]plan.TreeFile, map[string]plan.TreeFile, error) {
	var ms [2]map[string]plan.TreeFile
	for i, tree := range []*plan.Tree{a, b} {
		files, err := tree.Files()
		if err != nil {
			return nil, nil, fmt.Errorf("reading a fingerprint: %w", err)
		}
		ms[i] = make(map[string]plan.TreeFile, len(files))
		for _, f := range files {
			ms[i][f.Path] = f
		}
	}
	return ms[0], ms[1], nil
}

// sameState reports whether the file found now is the one a tree recorded.
func sameState(now, want plan.TreeFile) bool {
	return now.Hash == want.Hash && now.Size == want.Size && (want.Mode == 0 || now.Mode == want.Mode)
}

// stateOf is path p as a fingerprint records it, and whether anything is there. A path
// that cannot be reached inside the workspace is something there that is not a file.
func (w *workspace) stateOf(ctx context.Context, p string) (plan.TreeFile, bool, error) {
	fi, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return plan.TreeFile{}, false, nil
	case err != nil:
		return plan.TreeFile{Path: p, Hash: "unreachable"}, true, nil
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := w.root.Readlink(p)
		if err != nil {
			return plan.TreeFile{Path: p, Hash: "unreachable"}, true, nil
		}
		sum := sha256.Sum256([]byte(target))
		return plan.TreeFile{Path: p, Hash: "link:" + hex.EncodeToString(sum[:16])}, true, nil
	case fi.Mode().IsRegular():
		f, err := w.hashFile(ctx, p, make([]byte, 64<<10))
		return f, true, err
	}
	return plan.TreeFile{Path: p, Hash: "special:" + fileKind(fi.Mode())}, true, nil
}

// kept is the content fingerprints kept of file f (a link's target for a link), checked
// against its hash; ok is false when it was not kept.
func (t *Toolbox) kept(f plan.TreeFile) (data []byte, link, ok bool) {
	hash, link := strings.CutPrefix(f.Hash, "link:")
	if t.cfg.Baselines == "" || len(hash) != 32 {
		return nil, false, false
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return nil, false, false
	}
	data, err := os.ReadFile(filepath.Join(t.cfg.Baselines, hash[:2], hash))
	if err != nil {
		return nil, false, false
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:16]) != hash || (!link && int64(len(data)) != f.Size) {
		return nil, false, false // not what was recorded: a damaged copy is not written back
	}
	return data, link, true
}

// put puts pb back and says what it did; wf is the tree at acceptance, whose directories
// are kept when a removal empties them.
func (w *workspace) put(pb restoreStep, wf map[string]plan.TreeFile) (plan.UndoAction, error) {
	if !pb.had {
		if err := w.root.Remove(pb.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		w.removeEmptied(path.Dir(pb.path), wf)
		return plan.UndoRemoved, nil
	}
	dir := path.Dir(pb.path)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	tmp := path.Join(dir, ".plangate-undo-"+rand.Text())
	if pb.link {
		if err := w.root.Symlink(string(pb.data), tmp); err != nil {
			return "", err
		}
	} else if err := w.writeNew(tmp, pb.data, pb.mode); err != nil {
		return "", err
	}
	if err := w.root.Rename(tmp, pb.path); err != nil {
		_ = w.root.Remove(tmp)
		return "", err
	}
	if pb.inLeft {
		return plan.UndoRestored, nil
	}
	return plan.UndoRecreated, nil
}

// writeNew creates the file name (which must not exist) with data and mode (0644 when
// not known), synced.
func (w *workspace) writeNew(name string, data []byte, mode fs.FileMode) error {
	if mode == 0 {
		mode = 0o644
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = bytes.NewReader(data).WriteTo(f)
	err = errors.Join(err, f.Chmod(mode), f.Sync(), f.Close())
	if err != nil {
		_ = w.root.Remove(name)
	}
	return err
}

// removeEmptied removes dir and its parents while they are empty and held no file at
// acceptance (a directory the execution made for a file it created).
func (w *workspace) removeEmptied(dir string, wf map[string]plan.TreeFile) {
	for dir != "." && dir != "/" {
		prefix := dir + "/"
		for p := range wf {
			if strings.HasPrefix(p, prefix) {
				return
			}
		}
		if w.root.Remove(dir) != nil { // not empty, or gone
			return
		}
		dir = path.Dir(dir)
	}
}
