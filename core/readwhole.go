package core

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// Reading a plan file. A rewrite on Linux refills a file an earlier rewrite displaced, of
// any session (planfile_write_linux.go), so what an open of a plan's name ends on is not
// always what the name referred to when the open looked it up: the lookup can find file
// X under plans/A/a.md, a rewrite of a.md displace X so that it becomes the spare, a
// rewrite of session B's b.md fill X (no descriptor refers to it yet, so the lease is
// granted) and swap it in as b.md, and only then the open take its descriptor on X. An
// os.ReadFile would then upload B's plan into A's chat. ReadWhole closes that gap.

// readTries bounds ReadWhole's attempts. A mismatch needs a rewrite of the same file
// between an attempt's open and its check, microseconds apart; the file writer rewrites
// a file at most once per change of its plan.
const readTries = 8

// readWholeHook, when set (tests only), runs in ReadWhole after each open, before the
// read: where a preempted open would be overtaken by rewrites.
var readWholeHook atomic.Pointer[func(path string)]

// SetReadWholeHook makes fn run in every ReadWhole (and the engine's own reads of plan
// files) after the open and before the read, with the path read, until restore is
// called. It is for tests, which replay there on disk what rewrites racing with a
// reader do; nil removes the hook.
func SetReadWholeHook(fn func(path string)) (restore func()) {
	var p *func(string)
	if fn != nil {
		p = &fn
	}
	old := readWholeHook.Swap(p)
	return func() { readWholeHook.Store(old) }
}

// ReadWhole reads the file named path and returns one whole version of it: content that
// a writer wrote for path, never another file's. Every reader of plan files must use it
// rather than os.ReadFile (the channels uploading Plan.File, the engine keeping a
// "## Changes" section). It opens the file, reads it through the descriptor to the end
// and then, with the descriptor still open, compares the file it holds (fstat) with the
// file path names now (stat, following a final symbolic link as the open did): same
// device and inode, and the content is a version of path.
//
// Why that suffices on Linux: a writer changes the content of a file that has been under
// a plan's name only by refilling it as the spare, under a write lease, which the kernel
// grants only when no descriptor anywhere refers to the file; and an open of a leased
// file waits until the lease ends, after the write. So from the moment our open returns,
// file X cannot be refilled: what we read is X's content from its last fill (or its
// creation), and that fill was for the name the writer then swapped X in as. After that
// X is named only by that plan's name and then, once displaced, by the spare's (or by
// none, let go); it leaves the spare's name only by being filled again, which our
// descriptor forbids. So if path names X at the end, X's last fill was for path. If not, the
// attempt is discarded and the file read again (a rewrite displaced it meanwhile, or the
// race above happened); after readTries attempts ReadWhole fails saying the file kept
// changing. Elsewhere every write creates a new file and renames it into place, so the
// check only costs an fstat and a stat (and a read again after a rewrite meanwhile).
func ReadWhole(path string) ([]byte, error) {
	return readWhole(path, func() (*os.File, error) { return os.Open(path) },
		func() (fs.FileInfo, error) { return os.Stat(path) })
}

// readWhole is ReadWhole with the open and the stat of the name given, so that a read
// confined to an os.Root makes the same check.
func readWhole(path string, open func() (*os.File, error), stat func() (fs.FileInfo, error)) ([]byte, error) {
	for try := 0; try < readTries; try++ {
		data, same, err := readOnce(path, open, stat)
		if err != nil {
			return nil, err
		}
		if same {
			return data, nil
		}
	}
	return nil, fmt.Errorf("reading %s: the file kept changing while it was read (%d tries)", path, readTries)
}

// readOnce opens and reads the file and reports whether path still names the file read.
func readOnce(path string, open func() (*os.File, error), stat func() (fs.FileInfo, error)) ([]byte, bool, error) {
	f, err := open()
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if h := readWholeHook.Load(); h != nil {
		(*h)(path)
	}
	held, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	var b bytes.Buffer
	if size := held.Size(); size > 0 && size < 1<<30 {
		b.Grow(int(size) + bytes.MinRead) // room for the read that sees the end
	}
	if _, err := b.ReadFrom(f); err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	named, err := stat()
	if err != nil {
		// The name is gone (or not ours to stat): what was read cannot be vouched for.
		// The next attempt's open reports why, if it persists.
		return nil, false, nil
	}
	return b.Bytes(), os.SameFile(held, named), nil
}
