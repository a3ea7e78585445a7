package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// A workspace's .git/config, .git/hooks and .git/info decide what git runs later
// (hooks, core.fsmonitor, core.sshCommand, filters and their attributes): for the agent's
// next git call, or for a person's in the same directory. So do the pointers that send git
// to read those elsewhere: .git/commondir, a linked worktree's record under
// .git/worktrees, and .git itself when it is a file (gitdir: ...). Commands may use git
// (objects, refs and the index stay writable, so git commit works) but not change those:
//
//   - Under bwrap the ones that exist are bound read-only over themselves.
//   - Whatever the sandbox, run_command compares them before and after the command and
//     puts back what it changed (removing what it created), saying so in the result.
//
// The workspace root's .git is guarded, and the .git of every gitlink its index records (a
// submodule, or a repository a command nested below the root and added: git status at the
// root runs git inside those); a nested repository the index does not record is not.
// write_file and edit_file refuse all of .git.

// gitControl are the guarded paths under a .git directory, relative to the workspace;
// gitControlGlobs add those of each linked worktree's record and of each submodule's
// repository under .git/modules (two levels deep). gitFile, .git itself, is guarded when
// it is not a directory: a file there names the directory git reads everything from.
var (
	gitControl      = []string{".git/config", ".git/config.worktree", ".git/hooks", ".git/info", ".git/commondir"}
	gitControlGlobs = []string{".git/worktrees/*/commondir", ".git/worktrees/*/gitdir", ".git/worktrees/*/config.worktree",
		// A submodule's repository, which git status at the root runs git inside.
		".git/modules/*/config", ".git/modules/*/hooks", ".git/modules/*/info", ".git/modules/*/commondir",
		".git/modules/*/modules/*/config", ".git/modules/*/modules/*/hooks"}
)

const gitFile = ".git"

// maxGitSnapshot bounds what a snapshot holds; a workspace whose guarded .git parts are
// larger refuses commands rather than leave them unguarded.
const maxGitSnapshot = 8 << 20

// gitEntry is one file, directory or symlink of a guarded path.
type gitEntry struct {
	mode fs.FileMode // type and permission bits
	data []byte      // a file's content
	link string      // a symlink's target
}

func (e gitEntry) equal(o gitEntry) bool {
	return e.mode == o.mode && e.link == o.link && bytes.Equal(e.data, o.data)
}

// gitSnapshot is the guarded paths of a workspace as they were before a command.
type gitSnapshot struct {
	dir     string
	entries map[string]gitEntry // slash-separated workspace-relative path -> entry
	tops    []string            // the guarded paths looked at (guardedTops)
	dotgits []string            // the .git entries looked at as files (guardedTops)
}

var errGitTooLarge = fmt.Errorf("the workspace's .git/config, .git/hooks and .git/info hold more than %d MiB, too much to check after a command; remove what they need not hold", maxGitSnapshot>>20)

// snapshotGit reads the guarded paths of the workspace dir without following symlinks,
// and says which it looked at. A workspace without them gives an empty snapshot: whatever
// a command creates there is removed after it.
func snapshotGit(dir string) (*gitSnapshot, error) {
	s := &gitSnapshot{dir: dir, entries: map[string]gitEntry{}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return s, nil // no workspace yet: nothing to guard
	}
	defer root.Close()
	if fi, err := root.Lstat(gitFile); err == nil && !fi.IsDir() {
		e, err := readEntry(root, gitFile, fi, nil)
		if err != nil {
			return nil, err
		}
		s.entries[gitFile] = e
		s.dotgits = []string{gitFile} // nothing of gitControl can be under a file
		return s, nil
	}
	s.tops, s.dotgits = guardedTops(root)
	for _, p := range s.dotgits[1:] {
		if fi, err := root.Lstat(p); err == nil && !fi.IsDir() {
			if s.entries[p], err = readEntry(root, p, fi, nil); err != nil {
				return nil, err
			}
		}
	}
	total := 0
	for _, top := range s.tops {
		fi, err := root.Lstat(top)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			// .git is a symlink leading out of the workspace, or unreadable: kept as a
			// kind only, so a change to or from it still shows.
			s.entries[top] = gitEntry{mode: fs.ModeIrregular}
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := root.Readlink(top)
			if err != nil {
				return nil, err
			}
			s.entries[top] = gitEntry{mode: fs.ModeSymlink, link: link}
			continue
		}
		err = fs.WalkDir(root.FS(), top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := root.Lstat(p)
			if err != nil {
				return err
			}
			s.entries[p], err = readEntry(root, p, fi, &total)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// guardedTops are the guarded paths of the workspace root: gitControl, what
// gitControlGlobs match now, and for each gitlink of the root's index (a submodule or a
// nested repository) the same parts of its own .git directory. dotgits are the .git
// entries guarded when they are not a directory: the root's and each gitlink's.
func guardedTops(root *os.Root) (tops, dotgits []string) {
	tops = slices.Clone(gitControl)
	for _, g := range gitControlGlobs {
		m, _ := fs.Glob(root.FS(), g)
		tops = append(tops, m...)
	}
	dotgits = []string{gitFile}
	for _, p := range gitlinks(root) {
		for _, c := range gitControl {
			tops = append(tops, p+"/"+c)
		}
		dotgits = append(dotgits, p+"/"+gitFile)
	}
	return tops, dotgits
}

// readEntry reads the guarded entry p (fi is its Lstat). With total, a file's size counts
// towards maxGitSnapshot; without (a .git that is not a directory), a larger file is
// kept as a kind only, like a FIFO or a device.
func readEntry(root *os.Root, p string, fi fs.FileInfo, total *int) (gitEntry, error) {
	e := gitEntry{mode: fi.Mode() & (fs.ModeType | fs.ModePerm)}
	var err error
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		e.link, err = root.Readlink(p)
	case fi.Mode().IsRegular() && total != nil:
		if *total += int(fi.Size()); *total > maxGitSnapshot {
			return e, errGitTooLarge
		}
		e.data, err = root.ReadFile(p)
	case fi.Mode().IsRegular() && fi.Size() <= maxGitSnapshot:
		e.data, err = root.ReadFile(p)
	case fi.IsDir():
	default:
		e.mode = fi.Mode().Type()
	}
	return e, err
}

// restore puts back every guarded path the command changed and returns a note for the
// command's result ("" when nothing changed).
func (s *gitSnapshot) restore() string {
	if s == nil {
		return ""
	}
	now, err := snapshotGit(s.dir)
	all := err != nil // unreadable or too large now: every part counts as changed
	if all {
		now = &gitSnapshot{}
	}
	var changed []string
	var failed []string
	for _, p := range union(union([]string{gitFile}, s.dotgits), now.dotgits) {
		before, ok := s.entries[p]
		after, nowOK := now.entries[p]
		if !all && ok == nowOK && (!ok || before.equal(after)) {
			continue
		}
		if ok || nowOK {
			changed = append(changed, p)
			if err := s.putBackFile(p); err != nil {
				failed = append(failed, p+": "+hostless(err).Error())
			}
		}
	}
	for _, top := range union(s.tops, now.tops) {
		if !all && subtreeEqual(s.entries, now.entries, top) {
			continue
		}
		changed = append(changed, top)
		if err := s.putBack(top); err != nil {
			failed = append(failed, top+": "+hostless(err).Error())
		}
	}
	if len(changed) == 0 {
		return ""
	}
	what := "it was"
	if len(changed) > 1 {
		what = "they were"
	}
	note := fmt.Sprintf("The command changed %s, and %s put back: commands may not change .git/config, .git/hooks, .git/info or what points git elsewhere (.git as a file, .git/commondir, .git/worktrees records), because git runs what they name later. For a setting one git call needs, pass it as git -c key=value.", strings.Join(changed, ", "), what)
	if len(failed) > 0 {
		note += " Putting back failed for " + strings.Join(failed, "; ")
	}
	return note
}

// union is a followed by the paths of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// putBackFile makes the .git entry p what it was when it was not a directory: the file
// or symlink restored, or, where there was none, the one the command made removed. A .git
// directory the command made in place of a file goes too (with what it holds).
func (s *gitSnapshot) putBackFile(p string) error {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	before, ok := s.entries[p]
	fi, err := root.Lstat(p)
	if err == nil && (!fi.IsDir() || ok) {
		if err := root.RemoveAll(p); err != nil {
			return err
		}
	}
	switch {
	case !ok:
		return nil
	case before.mode&fs.ModeSymlink != 0:
		return root.Symlink(before.link, p)
	case before.mode.IsRegular():
		return replaceFile(root, p, before.data, before.mode.Perm())
	}
	return nil
}

// subtreeEqual reports whether a and b hold the same entries at and under top.
func subtreeEqual(a, b map[string]gitEntry, top string) bool {
	in := func(p string) bool { return p == top || strings.HasPrefix(p, top+"/") }
	n := 0
	for p, e := range a {
		if !in(p) {
			continue
		}
		n++
		if o, ok := b[p]; !ok || !e.equal(o) {
			return false
		}
	}
	for p := range b {
		if in(p) {
			n--
		}
	}
	return n == 0
}

// putBack removes what is at top now and recreates the snapshot's entries there, through
// os.Root: a .git the command turned into a symlink cannot lead the writes out of the
// workspace.
func (s *gitSnapshot) putBack(top string) error {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll(top); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var paths []string
	for p := range s.entries {
		if p == top || strings.HasPrefix(p, top+"/") {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	sort.Strings(paths) // parents before their children
	if err := root.MkdirAll(path.Dir(top), 0o755); err != nil {
		return err
	}
	for _, p := range paths {
		e := s.entries[p]
		perm := e.mode.Perm()
		switch {
		case e.mode.IsDir():
			err = root.Mkdir(p, perm)
			if err == nil {
				err = root.Chmod(p, perm)
			}
		case e.mode&fs.ModeSymlink != 0:
			err = root.Symlink(e.link, p)
		case e.mode.IsRegular():
			err = replaceFile(root, filepath.ToSlash(p), e.data, perm)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// gitArgs bind the guarded paths that exist in ws read-only over themselves, after the
// workspace's own bind. A symlink is left alone: binding would follow it.
func gitArgs(ws string) []string {
	dotgit := filepath.Join(ws, gitFile)
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return nil
	case fi.Mode().IsRegular():
		return []string{"--ro-bind", dotgit, dotgit}
	case !fi.IsDir():
		return nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil
	}
	defer root.Close()
	tops, dotgits := guardedTops(root)
	var a []string
	for _, rel := range dotgits[1:] { // a submodule's gitdir: pointer
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, rel := range tops {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if fi, err := os.Lstat(p); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			a = append(a, "--ro-bind", p, p)
		}
	}
	return a
}
