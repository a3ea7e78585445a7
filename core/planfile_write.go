package core

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Writing a plan file. Readers of the file are the channels that upload it (a proposal,
// /plan show: ReadWhole of Plan.File, possibly while the file writer rewrites it), the
// edit path that keeps its "## Changes from vN" section, and people who open it; the
// sandboxed agent never sees it (it is one of the hidden paths; it reads the workspace
// copy). None of them may see half a plan, so new content always goes into a file no
// reader holds and is swapped in under the plan's name by one rename.

// WritePlanFile writes data to plansDir/sessionDir/name, confined to plansDir: through an
// os.Root opened on it, or on Linux relative to descriptors of the two directories with
// no symbolic link followed, so neither name nor a link can place the file outside
// plansDir. The content goes into a file no reader holds and is renamed into place, so
// readers never see half a plan; it is not synced, since the store holds the plan durably.
// Any reader of plan files must read them with ReadWhole, not os.ReadFile: on Linux the
// file an open of the name ends on may have been refilled for another session's plan
// meanwhile (planfile_write_linux.go), and ReadWhole checks it was not.
// sessionDir and name must each be one path element. It returns
// filepath.Join(plansDir, sessionDir, name).
func WritePlanFile(plansDir, sessionDir, name string, data []byte) (string, error) {
	var pf planFiles
	return pf.write(plansDir, sessionDir, name, data)
}

// planFiles writes plan files (see WritePlanFile) and keeps what it learnt about the file
// system and how often it wrote; the zero value is ready. On Linux a rewrite reuses the
// file the previous rewrite displaced (planfile_write_linux.go) rather than creating one:
// creating and freeing an inode was most of a write's cost.
type planFiles struct {
	noLeases atomic.Bool  // the file system grants no leases: every write creates its file
	writes   atomic.Int64 // files written
	created  atomic.Int64 // of those, written into a newly created file
}

// write is WritePlanFile.
func (pf *planFiles) write(plansDir, sessionDir, name string, data []byte) (string, error) {
	if err := checkPathElement("session directory", sessionDir); err != nil {
		return "", err
	}
	if err := checkPathElement("file name", name); err != nil {
		return "", err
	}
	if done, err := pf.replace(plansDir, sessionDir, name, data); done {
		if err != nil {
			return "", fmt.Errorf("writing plan file: %w", err)
		}
	} else if err := pf.writePortably(plansDir, sessionDir, name, data); err != nil {
		return "", err
	}
	pf.writes.Add(1)
	// No fsync: the plan is durable in the store, and the file is a rendering of it that
	// /plan show writes again. Syncing here would double the disk flushes per decision.
	return filepath.Join(plansDir, sessionDir, name), nil
}

// writePortably writes through an os.Root, creating the directories when missing (a
// refresh, the common case, costs no mkdir calls).
func (pf *planFiles) writePortably(plansDir, sessionDir, name string, data []byte) error {
	root, err := os.OpenRoot(plansDir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(plansDir, 0o755); err != nil {
			return fmt.Errorf("creating plans directory: %w", err)
		}
		root, err = os.OpenRoot(plansDir)
	}
	if err != nil {
		return fmt.Errorf("opening plans directory: %w", err)
	}
	defer root.Close()
	err = pf.createAndRename(root, sessionDir, name, data)
	if errors.Is(err, fs.ErrNotExist) {
		if err := root.Mkdir(sessionDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating session plans directory: %w", err)
		}
		err = pf.createAndRename(root, sessionDir, name, data)
	}
	if err != nil {
		return fmt.Errorf("writing plan file: %w", err)
	}
	return nil
}

// createAndRename writes data to a new temporary file in sessionDir and renames it over
// name: the portable way, an inode created per write. It fails with fs.ErrNotExist when
// sessionDir is missing.
func (pf *planFiles) createAndRename(root *os.Root, sessionDir, name string, data []byte) error {
	target := filepath.Join(sessionDir, name)
	tmp := filepath.Join(sessionDir, tempName(name))
	if err := writeTemp(root, tmp, data); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	pf.created.Add(1)
	if err := root.Rename(tmp, target); err != nil {
		_ = root.Remove(tmp)
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
