package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/plangate/plangate/core"
)

// workspace is one call's view of a session workspace. Every file access goes through
// root, which refuses anything outside the directory, including through symlinks.
type workspace struct {
	root     *os.Root
	dir      string
	maxOut   int
	maxWrite int
	// hidden are plangate's own files (resolved), hiddenRel those inside the workspace.
	hidden, hiddenRel []string
	// protect refuses changes to the plan's workspace copy (Config.ProtectPlanCopy).
	protect bool
	// baselines is Config.Baselines, for fingerprints.
	baselines string
	// secrets checks what an edit completes with the text around it (Config.Secrets).
	secrets core.SecretScanner
}

// maxPathBytes is PATH_MAX: no longer path can be opened anyway.
const maxPathBytes = 4096

// cleanPath turns a path from the model into the cleaned, slash-separated,
// workspace-relative form the root and the engine's scope check use. Empty means the
// workspace root when emptyIsRoot, else it is refused. The lexical checks here give clear
// messages; os.Root is what actually enforces confinement (symlinks included).
func cleanPath(p string, emptyIsRoot bool) (string, error) {
	if p == "" {
		if emptyIsRoot {
			return ".", nil
		}
		return "", errors.New("path is required: give a path relative to the workspace root, e.g. README.md")
	}
	if len(p) > maxPathBytes {
		return "", fmt.Errorf("the path is %d bytes long; paths have at most %d", len(p), maxPathBytes)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte; give a plain relative path", p)
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("absolute path %q refused: paths are relative to the workspace root, e.g. docs/guide.md", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", fmt.Errorf("path %q leads outside the workspace: use a path inside it, without ..", p)
	}
	return c, nil
}

// fsError rewrites a file system error about rel for the model: what went wrong and what
// to do, without the host's directory names.
func fsError(rel string, err error) error {
	var pe *fs.PathError
	inner := err
	if errors.As(err, &pe) {
		inner = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist; list_files shows what is there", rel)
	case strings.Contains(inner.Error(), "path escapes from parent"):
		// os.Root's error for .. and for symlinks that lead out of the root.
		return fmt.Errorf("%s leads outside the workspace (through .. or a symlink) and is refused; use paths inside the workspace", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: a part of the path is a file, not a directory", rel)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s is a directory; list_files shows what is in it", rel)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: too many levels of symlinks", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", rel)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%s: the name is too long", rel)
	}
	return fmt.Errorf("%s: %v", rel, inner)
}

// refuseSymlinks refuses a write through a symlink anywhere in rel. The engine checks the
// plan's scope against the path the model names; writing through a link would change a
// different path than the one that was checked.
func (w *workspace) refuseSymlinks(tool, rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := w.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest will be created
		}
		if err != nil {
			return fsError(p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := w.root.Readlink(p)
			return fmt.Errorf("%s refuses to write through the symlink %s (-> %s): the plan's scope is checked on the path you give, so write to the real path instead", tool, p, target)
		}
	}
	return nil
}

// openWorkspace opens the root of ws, creating the directory (and seeding it) on first use.
func (t *Toolbox) openWorkspace(ws core.Workspace) (*os.Root, error) {
	if err := t.EnsureWorkspace(ws); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(ws.Dir)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", hostless(err))
	}
	return root, nil
}

// ensureWorkspace creates dir if it is missing. With a seed, the copy is made in a
// temporary sibling and renamed into place, so a workspace is either absent or complete:
// a crash half-way leaves no half-seeded workspace, and an existing workspace is never
// seeded again (files the agent deleted stay deleted).
func (t *Toolbox) ensureWorkspace(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("the workspace path exists but is not a directory")
		}
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking the workspace: %w", hostless(err))
	}
	t.seedMu.Lock()
	defer t.seedMu.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return nil // created while we waited
	}
	if t.cfg.Seed == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating the workspace: %w", hostless(err))
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating the workspace: %w", hostless(err))
	}
	tmp, err := os.MkdirTemp(parent, ".plangate-seed-*")
	if err != nil {
		return fmt.Errorf("creating the workspace: %w", hostless(err))
	}
	if err := copyTree(t.cfg.Seed, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copying the sample workspace: %w", hostless(err))
	}
	err = os.Chmod(tmp, 0o755)
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil // another process created it first
		}
		return fmt.Errorf("creating the workspace: %w", hostless(err))
	}
	return nil
}

// hostless drops the host's directory names from an error the model will read: the
// workspace's place on the gateway's disk is none of its business.
func hostless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

// copyTree copies the regular files and directories under src into dst, both through
// os.Root. Symlinks and special files are skipped, so a seed cannot smuggle in a link
// that points out of the workspace.
func copyTree(src, dst string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	return fs.WalkDir(from.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		switch {
		case d.IsDir():
			return to.Mkdir(p, 0o755)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(from, to, p, fi.Mode().Perm()|0o600)
		}
		return nil
	})
}

func copyFile(from, to *os.Root, p string, perm fs.FileMode) error {
	in, err := from.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
