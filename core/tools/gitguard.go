package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A workspace's .git/config, .git/hooks and .git/info decide what git runs later
// (hooks, core.fsmonitor, core.sshCommand, filters and their attributes): for the agent's
// next git call, or for a person's in the same directory. Commands may use git (objects,
// refs and the index stay writable, so git commit works) but not change those:
//
//   - Under bwrap the ones that exist are bound read-only over themselves.
//   - Whatever the sandbox, run_command compares them before and after the command and
//     puts back what it changed (removing what it created), saying so in the result.
//
// Only the workspace root's .git is guarded; write_file and edit_file refuse all of .git.

// gitControl are the guarded paths, relative to the workspace.
var gitControl = []string{".git/config", ".git/config.worktree", ".git/hooks", ".git/info"}

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
}

var errGitTooLarge = fmt.Errorf("the workspace's .git/config, .git/hooks and .git/info hold more than %d MiB, too much to check after a command; remove what they need not hold", maxGitSnapshot>>20)

// snapshotGit reads the guarded paths of the workspace dir. A workspace without them
// gives an empty snapshot: whatever a command creates there is removed after it.
func snapshotGit(dir string) (*gitSnapshot, error) {
	s := &gitSnapshot{dir: dir}
	entries, err := readGit(dir)
	if err != nil {
		return nil, err
	}
	s.entries = entries
	return s, nil
}

// readGit reads the guarded paths under dir without following symlinks.
func readGit(dir string) (map[string]gitEntry, error) {
	out := map[string]gitEntry{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return out, nil // no workspace yet: nothing to guard
	}
	defer root.Close()
	total := 0
	for _, top := range gitControl {
		fi, err := root.Lstat(top)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			// .git is a symlink leading out of the workspace, or unreadable: kept as a
			// kind only, so a change to or from it still shows.
			out[top] = gitEntry{mode: fs.ModeIrregular}
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := root.Readlink(top)
			if err != nil {
				return nil, err
			}
			out[top] = gitEntry{mode: fs.ModeSymlink, link: link}
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
			e := gitEntry{mode: fi.Mode() & (fs.ModeType | fs.ModePerm)}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				e.link, err = root.Readlink(p)
			case fi.Mode().IsRegular():
				if total += int(fi.Size()); total > maxGitSnapshot {
					return errGitTooLarge
				}
				e.data, err = root.ReadFile(p)
			case fi.IsDir():
			default:
				e.mode = fi.Mode().Type() // a FIFO or device: kept as a kind only
			}
			if err != nil {
				return err
			}
			out[p] = e
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// restore puts back every guarded path the command changed and returns a note for the
// command's result ("" when nothing changed).
func (s *gitSnapshot) restore() string {
	if s == nil {
		return ""
	}
	now, err := readGit(s.dir)
	all := err != nil // unreadable or too large now: every part counts as changed
	var changed []string
	var failed []string
	for _, top := range gitControl {
		if !all && subtreeEqual(s.entries, now, top) {
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
	note := fmt.Sprintf("The command changed %s, and %s put back: commands may not change .git/config, .git/hooks or .git/info, because git runs what they name later. For a setting one git call needs, pass it as git -c key=value.", strings.Join(changed, ", "), what)
	if len(failed) > 0 {
		note += " Putting back failed for " + strings.Join(failed, "; ")
	}
	return note
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
			w := &workspace{root: root, dir: s.dir}
			err = w.replaceFile(filepath.ToSlash(p), e.data, perm)
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
	if fi, err := os.Lstat(filepath.Join(ws, ".git")); err != nil || !fi.IsDir() {
		return nil
	}
	var a []string
	for _, rel := range gitControl {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if fi, err := os.Lstat(p); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			a = append(a, "--ro-bind", p, p)
		}
	}
	return a
}
