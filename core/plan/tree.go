package plan

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Tree is a fingerprint of a workspace at one moment: git's HEAD when the workspace is a
// repository, and every file's path, size and content hash (the plan's own copy, PLAN.md
// and PLAN.json, and .git left out), so a later fingerprint can name what changed.
//
// The file list is kept packed (deflated, base64) and is not part of the tree's JSON: a
// version's run is read with the plan on every message, and a list of thousands of files
// would make each read cost a millisecond. The engine keeps the packed list apart, by the
// tree's Hash, and puts it back (Packed) when a comparison needs it.
type Tree struct {
	// Head is the commit git's HEAD names ("" outside a repository or before the first
	// commit), and Ref the branch it is on ("" when detached).
	Head string `json:"head,omitempty"`
	Ref  string `json:"ref,omitempty"`
	// Hash is the hash of the whole file list: two trees with the same hash hold the same files.
	Hash  string `json:"hash"`
	Count int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Packed is the file list, one "path\tsize\thash\tmode\n" line per file in path order
	// (mode in octal, left out when not known), deflated and base64-encoded; "" when it was
	// not loaded.
	Packed string `json:"-"`
}

// TreeFile is one file of a Tree. A symbolic link is recorded, not followed: its Hash is
// the hash of its target's name, prefixed "link:".
type TreeFile struct {
	Path string
	Size int64
	Hash string
	// Mode is a regular file's permission bits (what /plan undo puts back); 0 when not
	// known (a link, a special file, a tree recorded before modes were).
	Mode fs.FileMode
}

// NewTree builds the fingerprint of files (any order) at git's head and ref.
func NewTree(head, ref string, files []TreeFile) (*Tree, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b TreeFile) int { return strings.Compare(a.Path, b.Path) })
	var list bytes.Buffer
	t := &Tree{Head: head, Ref: ref, Count: len(files)}
	for _, f := range files {
		if strings.ContainsAny(f.Path, "\t\n") {
			// Such a name cannot be a line of the list; its content still counts.
			f.Path = strconv.Quote(f.Path)
		}
		fmt.Fprintf(&list, "%s\t%d\t%s", f.Path, f.Size, f.Hash)
		if m := f.Mode.Perm(); m != 0 {
			fmt.Fprintf(&list, "\t%o", uint32(m))
		}
		list.WriteByte('\n')
		t.Bytes += f.Size
	}
	sum := sha256.Sum256(list.Bytes())
	t.Hash = hex.EncodeToString(sum[:])
	var packed bytes.Buffer
	enc := base64.NewEncoder(base64.StdEncoding, &packed)
	zw, err := flate.NewWriter(enc, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(list.Bytes()); err != nil {
		return nil, fmt.Errorf("packing the file list: %w", err)
	}
	if err := errors.Join(zw.Close(), enc.Close()); err != nil {
		return nil, fmt.Errorf("packing the file list: %w", err)
	}
	t.Packed = packed.String()
	return t, nil
}

// Files unpacks the file list, in path order.
func (t *Tree) Files() ([]TreeFile, error) {
	if t == nil || t.Count == 0 {
		return nil, nil
	}
	if t.Packed == "" {
		return nil, errors.New("the file list of the fingerprint is not loaded")
	}
	zr := flate.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(t.Packed)))
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("unpacking the file list: %w", err)
	}
	files := make([]TreeFile, 0, t.Count)
	for line := range strings.Lines(string(data)) {
		parts := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(parts) != 3 && len(parts) != 4 {
			return nil, fmt.Errorf("unpacking the file list: bad line %q", line)
		}
		size, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unpacking the file list: bad size in %q", line)
		}
		f := TreeFile{Path: parts[0], Size: size, Hash: parts[2]}
		if len(parts) == 4 {
			m, err := strconv.ParseUint(parts[3], 8, 32)
			if err != nil || m > 0o777 {
				return nil, fmt.Errorf("unpacking the file list: bad mode in %q", line)
			}
			f.Mode = fs.FileMode(m)
		}
		files = append(files, f)
	}
	return files, nil
}

// ChangeKind is how one path differs between two trees.
type ChangeKind string

// The kinds of change.
const (
	FileAdded   ChangeKind = "added"
	FileChanged ChangeKind = "changed"
	FileRemoved ChangeKind = "removed"
)

// FileChange is one path that differs between two trees.
type FileChange struct {
	Path string
	Kind ChangeKind
}

// TreeChanges is what differs between two trees: the files, in path order, and whether
// git's HEAD moved (HeadFrom → HeadTo).
type TreeChanges struct {
	Files          []FileChange
	HeadFrom       string
	HeadTo         string
	RefFrom, RefTo string
}

// Empty reports whether the two trees are the same.
func (c TreeChanges) Empty() bool {
	return len(c.Files) == 0 && c.HeadFrom == c.HeadTo && c.RefFrom == c.RefTo
}

// Paths lists the changed files' paths.
func (c TreeChanges) Paths() []string {
	out := make([]string, len(c.Files))
	for i, f := range c.Files {
		out[i] = f.Path
	}
	return out
}

// CompareTrees says what changed from tree a to tree b. A nil a (a version proposed
// before plangate kept fingerprints) compares as unknown: no changes.
func CompareTrees(a, b *Tree) (TreeChanges, error) {
	var c TreeChanges
	if a == nil || b == nil {
		return c, nil
	}
	if a.Head != b.Head || a.Ref != b.Ref {
		c.HeadFrom, c.HeadTo, c.RefFrom, c.RefTo = a.Head, b.Head, a.Ref, b.Ref
	}
	if a.Hash == b.Hash {
		return c, nil
	}
	af, err := a.Files()
	if err != nil {
		return c, err
	}
	bf, err := b.Files()
	if err != nil {
		return c, err
	}
	i, j := 0, 0
	for i < len(af) || j < len(bf) {
		switch {
		case j == len(bf) || (i < len(af) && af[i].Path < bf[j].Path):
			c.Files = append(c.Files, FileChange{af[i].Path, FileRemoved})
			i++
		case i == len(af) || bf[j].Path < af[i].Path:
			c.Files = append(c.Files, FileChange{bf[j].Path, FileAdded})
			j++
		default:
			if af[i].Hash != bf[j].Hash || af[i].Size != bf[j].Size || modeChanged(af[i].Mode, bf[j].Mode) {
				c.Files = append(c.Files, FileChange{af[i].Path, FileChanged})
			}
			i++
			j++
		}
	}
	return c, nil
}

// modeChanged reports whether two known modes differ; an unknown one (0) matches any.
func modeChanged(a, b fs.FileMode) bool { return a != 0 && b != 0 && a != b }

// Words names the changes for a person: "src/a.go changed, b.txt added and 3 more",
// naming at most max files; HEAD's move comes first ("HEAD moved from 1a2b3c4 to 5d6e7f8").
func (c TreeChanges) Words(max int) string {
	var parts []string
	if c.HeadFrom != c.HeadTo || c.RefFrom != c.RefTo {
		parts = append(parts, headWords(c))
	}
	head := len(parts)
	for _, f := range c.Files {
		parts = append(parts, f.Path+" "+string(f.Kind))
	}
	return NameSome(parts, head+max)
}

// NameSome names items for a person: "a, b and c", at most max of them, then "and N more".
func NameSome(items []string, max int) string {
	switch n := len(items); {
	case n == 0:
		return ""
	case n > max:
		return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", n-max)
	case n == 1:
		return items[0]
	default:
		return strings.Join(items[:n-1], ", ") + " and " + items[n-1]
	}
}

func headWords(c TreeChanges) string {
	short := func(h string) string {
		if h == "" {
			return "none"
		}
		return h[:min(7, len(h))]
	}
	if c.RefFrom != c.RefTo && c.RefTo != "" && c.RefFrom != "" {
		return fmt.Sprintf("the branch changed from %s to %s", c.RefFrom, c.RefTo)
	}
	return fmt.Sprintf("HEAD moved from %s to %s", short(c.HeadFrom), short(c.HeadTo))
}
