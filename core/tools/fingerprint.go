package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// maxHashedFile is the largest file whose content the fingerprint hashes; a larger one is
// recorded by its size and modification time, so one huge file does not make every
// fingerprint slow.
const maxHashedFile = 64 << 20

// Fingerprint is the state of the workspace ws as a plan.Tree: git's HEAD when it is a
// repository, and every file the file tools see — the same walk as list_files and
// search_files, so .git and the hidden paths are left out and symlinks are recorded, not
// followed — except the plan's own copy (PLAN.md, PLAN.json at the root), which plangate
// writes itself. Special files are skipped; a file that cannot be read counts by its error.
func (t *Toolbox) Fingerprint(ctx context.Context, ws core.Workspace) (*plan.Tree, error) {
	root, err := t.openWorkspace(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	w := &workspace{root: root, dir: ws.Dir, baselines: t.cfg.Baselines}
	if len(t.cfg.Hidden) > 0 {
		w.hidden, w.hiddenRel = hiddenIn(ws.Dir, t.cfg.Hidden)
	}
	var files []plan.TreeFile
	buf := make([]byte, 64<<10)
	err = w.walk(ctx, ".", func(p string, err error) {
		files = append(files, plan.TreeFile{Path: p, Hash: "unreadable:" + strings.ReplaceAll(fsError(p, err).Error(), "\t", " ")})
	}, func(p string, d fs.DirEntry) error {
		if p == "." || d.IsDir() {
			return nil
		}
		if _, ok := core.IsPlanCopy(p); ok {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				target = "?"
			}
			sum := sha256.Sum256([]byte(target))
			if w.baselines != "" && target != "?" {
				w.keepBaseline(hex.EncodeToString(sum[:16]), []byte(target)) // for /plan undo
			}
			files = append(files, plan.TreeFile{Path: p, Hash: "link:" + hex.EncodeToString(sum[:16])})
		case d.Type().IsRegular():
			f, err := w.hashFile(ctx, p, buf)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fingerprinting the workspace: %w", err)
	}
	head, ref := gitHead(root)
	return plan.NewTree(head, ref, files)
}

// hashFile is the TreeFile of the regular file p: its size and a hash of its content (the
// first 128 bits of SHA-256, enough to tell versions of a file apart). The checks use the
// opened file's fstat: the entry may have been swapped since the directory was read.
func (w *workspace) hashFile(ctx context.Context, p string, buf []byte) (plan.TreeFile, error) {
	f, fi, err := w.openNonBlocking(p)
	if err != nil {
		return plan.TreeFile{Path: p, Hash: "unreadable"}, nil
	}
	defer f.Close()
	tf := plan.TreeFile{Path: p, Size: fi.Size(), Mode: fi.Mode().Perm()}
	switch {
	case !fi.Mode().IsRegular():
		tf.Hash, tf.Mode = "special:"+fileKind(fi.Mode()), 0
		return tf, nil
	case fi.Size() > maxHashedFile:
		tf.Hash = "stat:" + strconv.FormatInt(fi.ModTime().UnixNano(), 36)
		return tf, nil
	}
	h := sha256.New()
	var kept *bytes.Buffer
	r := io.Reader(&budgetReader{ctx: ctx, r: f, left: maxHashedFile + 1})
	if w.baselines != "" && fi.Size() <= MaxBaselineFile {
		kept = bytes.NewBuffer(make([]byte, 0, fi.Size()))
		r = io.TeeReader(r, kept)
	}
	if _, err := io.CopyBuffer(h, r, buf); err != nil {
		if ctx.Err() != nil {
			return tf, ctx.Err()
		}
		tf.Hash = "unreadable"
		return tf, nil
	}
	tf.Hash = hex.EncodeToString(h.Sum(nil)[:16])
	if kept != nil {
		w.keepBaseline(tf.Hash, kept.Bytes())
	}
	return tf, nil
}

// gitHead reads the commit HEAD names and its branch from the workspace's .git directory
// without running git (whose configuration the workspace controls). A workspace that is
// not a repository, or whose .git is a file (a worktree), gives "".
func gitHead(root *os.Root) (head, ref string) {
	data, err := readSmall(root, ".git/HEAD")
	if err != nil {
		return "", ""
	}
	line := strings.TrimSpace(string(data))
	name, ok := strings.CutPrefix(line, "ref: ")
	if !ok {
		return line, ""
	}
	ref = strings.TrimPrefix(name, "refs/heads/")
	if !strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") {
		return "", ref
	}
	if data, err := readSmall(root, ".git/"+name); err == nil {
		return strings.TrimSpace(string(data)), ref
	}
	packed, err := readSmall(root, ".git/packed-refs")
	if err != nil {
		return "", ref // a branch without commits
	}
	for line := range strings.Lines(string(packed)) {
		if hash, n, ok := strings.Cut(strings.TrimSpace(line), " "); ok && n == name {
			return hash, ref
		}
	}
	return "", ref
}

// readSmall reads a file of at most 1 MiB through root, refusing anything but a regular file.
func readSmall(root *os.Root, p string) ([]byte, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(io.LimitReader(f, 1<<20))
	return b.Bytes(), err
}
