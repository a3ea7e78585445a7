package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/aymanbagabas/go-udiff/lcs"

	"github.com/plangate/plangate/core/plan"
)

// MaxBaselineFile is the largest file whose content a fingerprint keeps for counting
// changed lines; a larger file counts as a changed file with no lines.
const MaxBaselineFile = 1 << 20

// keepBaseline stores data under its content hash in the baselines directory, once: a
// file of the same hash is the same content. Binary data is kept too (/plan undo puts it
// back), though its lines are not counted. A failure leaves the file uncounted in lines
// and not restorable by /plan undo, nothing more.
func (w *workspace) keepBaseline(hash string, data []byte) {
	if len(hash) < 3 {
		return
	}
	p := filepath.Join(w.baselines, hash[:2], hash)
	if _, err := os.Lstat(p); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	tmp := p + ".tmp-" + rand.Text()
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
	}
}

// LinesChanged counts the lines added plus removed in paths from tree a to tree b, by a
// line diff (Myers' algorithm, go-udiff's lcs package) of the kept contents. A path absent
// from a tree is an empty file there; a binary file, one over MaxBaselineFile or one whose
// content was not kept counts no lines (it still counts as a changed file).
func (t *Toolbox) LinesChanged(ctx context.Context, a, b *plan.Tree, paths []string) (int, error) {
	counts, err := t.LineCounts(ctx, a, b, paths)
	total := 0
	for _, c := range counts {
		total += c.Added + c.Removed
	}
	return total, err
}

// LineCounts is LinesChanged per path, the lines added and removed apart, with how the
// path changed; a path equal in both trees is left out.
func (t *Toolbox) LineCounts(ctx context.Context, a, b *plan.Tree, paths []string) ([]plan.FileLines, error) {
	if t.cfg.Baselines == "" {
		return nil, errors.New("no baselines directory is configured")
	}
	af, bf, err := byPaths(a, b)
	if err != nil {
		return nil, err
	}
	var out []plan.FileLines
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		fa, inA := af[p]
		fb, inB := bf[p]
		ha, hb := fa.Hash, fb.Hash
		if ha == hb && inA == inB {
			continue
		}
		fl := plan.FileLines{Path: p, Kind: plan.FileChanged}
		switch {
		case !inA:
			fl.Kind = plan.FileAdded
		case !inB:
			fl.Kind = plan.FileRemoved
		}
		before, ok1 := t.baseline(ha)
		after, ok2 := t.baseline(hb)
		if ok1 && ok2 {
			fl.Added, fl.Removed = lineDelta(before, after)
			fl.Counted = true
		}
		out = append(out, fl)
	}
	return out, nil
}

// lineDelta is the number of lines added in after and removed from before.
func lineDelta(before, after string) (added, removed int) {
	bl, al := splitLines(before), splitLines(after)
	for _, d := range lcs.DiffLines(bl, al) {
		removed += d.End - d.Start
		added += d.ReplEnd - d.ReplStart
	}
	return added, removed
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for l := range strings.Lines(s) {
		out = append(out, l)
	}
	return out
}

// baseline is the kept content of hash; "" (absent from the tree) is an empty file.
func (t *Toolbox) baseline(hash string) (string, bool) {
	if hash == "" {
		return "", true
	}
	if _, err := hex.DecodeString(hash); err != nil || len(hash) < 3 {
		return "", false // a link, a special or unreadable file, a huge one: no lines
	}
	data, err := os.ReadFile(filepath.Join(t.cfg.Baselines, hash[:2], hash))
	if err != nil || bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
		return "", false // not kept, or binary: its lines mean nothing
	}
	return string(data), true
}
