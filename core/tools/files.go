package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// Limits on what one call reads or writes.
const (
	// DefaultMaxWriteBytes is tools.max_write_bytes when unset: the largest file
	// write_file and edit_file produce.
	DefaultMaxWriteBytes = 1 << 20
	// maxReadBytes is the most read_file reads of one file in one call, counting
	// included: a huge or sparse file is not read to its end for a one-line page.
	maxReadBytes = 32 << 20
	// maxCountBytes is the most read_file reads past its page to count the lines left.
	maxCountBytes = 4 << 20
)

// errReadBudget ends a read that reached maxReadBytes.
var errReadBudget = errors.New("read limit reached")

// openRegular opens rel for reading through the root and refuses anything that is not a
// regular file with a single link. The open is non-blocking, so a FIFO (or a device)
// cannot hang the turn, and the checks use fstat on the opened file, so the file cannot
// be swapped between a check and the read. A second hard link may be a file outside the
// workspace that os.Root cannot see, so such files are refused.
func (w *workspace) openRegular(tool, rel string) (*os.File, fs.FileInfo, error) {
	f, fi, err := w.openNonBlocking(rel)
	if err != nil {
		return nil, nil, err
	}
	switch n := linkCount(fi); {
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory; list_files with path %q shows what is in it", rel, rel)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file (it is %s); %s works on regular files only", rel, fileKind(fi.Mode()), tool)
	case n > 1:
		err = fmt.Errorf("%s has %d hard links; %s refuses files with more than one link, because another link may be a file outside the workspace (write_file replaces such a file with a new one)", rel, n, tool)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// openNonBlocking opens rel read-only without waiting (a FIFO opens at once) and returns
// the opened file's own fstat.
func (w *workspace) openNonBlocking(rel string) (*os.File, fs.FileInfo, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, nil, fsError(rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fsError(rel, err)
	}
	return f, fi, nil
}

// fileKind names a non-regular file type for people.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "a special file"
}

// budgetReader reads at most left bytes, then fails with errReadBudget, and stops when
// ctx is cancelled: a read of a huge file ends with the turn.
type budgetReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.left <= 0 {
		return 0, errReadBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// readRegular reads a whole regular, single-link file of at most limit bytes.
func (w *workspace) readRegular(ctx context.Context, tool, rel string, limit int) ([]byte, fs.FileInfo, error) {
	f, fi, err := w.openRegular(tool, rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > int64(limit) {
		return nil, nil, fmt.Errorf("%s is %d bytes, more than the %d bytes %s handles (tools.max_write_bytes); write_file can replace it", rel, fi.Size(), limit, tool)
	}
	data, err := io.ReadAll(&budgetReader{ctx: ctx, r: f, left: int64(limit) + 1})
	switch {
	case errors.Is(err, errReadBudget):
		return nil, nil, fmt.Errorf("%s grew past %d bytes while it was read", rel, limit)
	case err != nil:
		return nil, nil, fsError(rel, err)
	}
	return data, fi, nil
}

// replaceFile writes data to rel atomically: a temporary file in the same directory is
// written, synced and renamed over rel. A hard link at rel is replaced, never written
// through (the other link keeps its content), and a crash leaves the old or the new
// file, never half of one.
func replaceFile(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	dir := path.Dir(rel)
	tmp := path.Join(dir, ".plangate-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fsError(rel, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // after creating: the umask must not change a kept mode
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fsError(rel, err)
	}
	if d, err := root.Open(dir); err == nil {
		_ = d.Sync() // make the rename itself durable; best effort
		_ = d.Close()
	}
	return nil
}
