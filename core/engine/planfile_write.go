package engine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Writing a plan file. Its readers (channels uploading it, possibly while it is rewritten;
// the edit path keeping its "## Changes from vN" section; people) may not see half a plan,
// so every write creates a new file beside it and moves the plan's name to it in one step
// (replaceFile): an open of the name gets one whole version, and no file is written again
// once it has had the plan's name.

// WritePlanFile writes data to plansDir/sessionDir/name through an os.Root opened on
// plansDir, so neither name nor a symbolic link can place the file outside it; the
// directories are created when missing. The content goes into a new file created
// exclusively under a random name and is put in place by replaceFile. It is not synced:
// the store holds the plan, and /plan show writes the file again. sessionDir and name must
// each be one path element. It returns filepath.Join(plansDir, sessionDir, name).
func WritePlanFile(plansDir, sessionDir, name string, data []byte) (string, error) {
	if err := checkPathElement("session directory", sessionDir); err != nil {
		return "", err
	}
	if err := checkPathElement("file name", name); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(plansDir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(plansDir, 0o755); err != nil {
			return "", fmt.Errorf("creating plans directory: %w", err)
		}
		root, err = os.OpenRoot(plansDir)
	}
	if err != nil {
		return "", fmt.Errorf("opening plans directory: %w", err)
	}
	defer root.Close()
	err = createAndRename(root, sessionDir, name, data)
	if errors.Is(err, fs.ErrNotExist) {
		// A refresh, the common case, finds the session directory and costs no mkdir.
		if err := root.Mkdir(sessionDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating session plans directory: %w", err)
		}
		err = createAndRename(root, sessionDir, name, data)
	}
	if err != nil {
		return "", fmt.Errorf("writing plan file: %w", err)
	}
	return filepath.Join(plansDir, sessionDir, name), nil
}

// createAndRename writes data to a new temporary file in sessionDir (so this works when
// it is another file system's) and puts it in place of name. It fails with
// fs.ErrNotExist when sessionDir is missing.
func createAndRename(root *os.Root, sessionDir, name string, data []byte) error {
	dir, err := root.Open(sessionDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	tmp := tempName(name)
	if err := writeTemp(root, filepath.Join(sessionDir, tmp), data); err != nil {
		_ = root.Remove(filepath.Join(sessionDir, tmp))
		return err
	}
	if err := replaceFile(root, dir, sessionDir, tmp, name); err != nil {
		_ = root.Remove(filepath.Join(sessionDir, tmp))
		return err
	}
	return nil
}

// tempName is a fresh name beside name for content on its way in; a crash leaves it
// behind as a dot-file.
func tempName(name string) string { return "." + name + ".tmp-" + rand.Text() }

func writeTemp(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(0o644) // the umask may have narrowed the mode
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func checkPathElement(what, s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\:\x00") {
		return fmt.Errorf("plan %s %q is not a single path element", what, s)
	}
	return nil
}
