//go:build linux

package core

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// On Linux a rewrite does not create a file. Creating one and freeing the one a rename
// displaced cost ext4 60–100 µs of CPU per write, most of a decision's file work; writing
// 2 KB into an existing file and swapping names costs about a tenth. So the file a rewrite
// displaces is kept as the plans directory's spare, and the next write (of any plan file
// under that directory) fills the spare and swaps it in with renameat2(RENAME_EXCHANGE),
// which leaves the displaced file under the temporary name, to become the spare in turn.
//
// Reusing a file must not tear a read of it: a reader that opened the plan file before it
// was displaced may still be reading. The spare is filled only under a write lease
// (F_SETLEASE F_WRLCK), which the kernel grants only when no other descriptor anywhere
// refers to the file, and which makes an open that comes later wait until the lease ends,
// after the write. A spare that some reader holds is let go (the reader keeps its copy)
// and the write goes into a new file, as it does where leases or the exchange are not
// available. So a reader sees one whole version, old or new, as with create and rename.
//
// The spare is claimed by renaming it to the writer's temporary name first, so two
// writers (another engine on the same directory, a prepare beside the file writer) never
// fill the same file. All calls take a single path element relative to directories opened
// through the os.Root, and none follows a symbolic link.

// spareName is the plans directory's spare: a file an earlier rewrite displaced.
const spareName = ".plangate-spare"

// replace writes data under sessionDir/name in place of what is there. It takes the
// portable path (createAndRename) where it does nothing here: the plans or session
// directory is missing (created there) or the session directory is a symbolic link
// (os.Root follows it if it stays inside), or leases are refused.
func (pf *planFiles) replace(plansDir, sessionDir, name string, data []byte) (bool, error) {
	if pf.noLeases.Load() {
		return false, nil
	}
	top, err := unix.Open(plansDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, nil
	}
	defer unix.Close(top)
	dir, err := unix.Openat(top, sessionDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, nil
	}
	defer unix.Close(dir)
	d := dirPair{top: top, dir: dir}
	tmp := tempName(name)
	fd, ok := pf.claimSpare(d, tmp)
	if !ok {
		if fd, err = d.create(tmp); err != nil {
			return true, err
		}
		pf.created.Add(1)
	}
	err = fill(fd, data)
	if cerr := unix.Close(fd); err == nil { // closing ends the lease
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(d.dir, tmp, 0)
		return true, &os.PathError{Op: "write", Path: tmp, Err: err}
	}
	return true, d.swapIn(tmp, name)
}

// fill makes data the content of the file open as fd (a spare may be longer).
func fill(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return unix.Ftruncate(fd, int64(len(data)))
}

// dirPair holds the descriptors of the plans directory (top) and a session's (dir).
type dirPair struct{ top, dir int }

// claimSpare takes the spare under the name tmp in the session directory, open for
// writing and leased; false when there is none, or none that is safe to overwrite.
func (pf *planFiles) claimSpare(d dirPair, tmp string) (int, bool) {
	if unix.Renameat(d.top, spareName, d.dir, tmp) != nil {
		return -1, false // none, or not movable here
	}
	// O_NONBLOCK: a FIFO left as the spare must not block the open.
	fd, err := unix.Openat(d.dir, tmp, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if unix.Unlinkat(d.dir, tmp, 0) != nil {
			_ = unix.Renameat(d.dir, tmp, d.top, spareName) // a directory: put it back
		}
		return -1, false
	}
	var st unix.Stat_t
	ok := unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1
	if ok {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK)
		if errors.Is(err, unix.EINVAL) {
			pf.noLeases.Store(true) // this file system grants none
		}
		ok = err == nil // EAGAIN: someone has it open
	}
	if ok && st.Mode&0o7777 != 0o644 {
		ok = unix.Fchmod(fd, 0o644) == nil
	}
	if !ok {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(d.dir, tmp, 0) // whoever holds it keeps it
		return -1, false
	}
	return fd, true
}

// create makes the new file tmp in the session directory.
func (d dirPair) create(tmp string) (int, error) {
	fd, err := unix.Openat(d.dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: tmp, Err: err}
	}
	if err := unix.Fchmod(fd, 0o644); err != nil { // the umask may have narrowed the mode
		_ = unix.Close(fd)
		_ = unix.Unlinkat(d.dir, tmp, 0)
		return -1, &os.PathError{Op: "chmod", Path: tmp, Err: err}
	}
	return fd, nil
}

// swapIn puts the filled file tmp under name. Exchanging keeps the displaced file (as the
// spare); where there is none yet, or the file system cannot exchange, a rename does.
func (d dirPair) swapIn(tmp, name string) error {
	if unix.Renameat2(d.dir, tmp, d.dir, name, unix.RENAME_EXCHANGE) == nil {
		return d.keepDisplaced(tmp, name)
	}
	if err := unix.Renameat(d.dir, tmp, d.dir, name); err != nil {
		_ = unix.Unlinkat(d.dir, tmp, 0)
		return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: err}
	}
	return nil
}

// keepDisplaced makes the file the exchange left under tmp the spare: a regular file
// linked nowhere else. Anything else is removed, as a rename over it would have, except
// a directory, which is put back: renaming a file over one fails.
func (d dirPair) keepDisplaced(tmp, name string) error {
	var st unix.Stat_t
	if unix.Fstatat(d.dir, tmp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			if unix.Renameat2(d.dir, tmp, d.dir, name, unix.RENAME_EXCHANGE) == nil {
				_ = unix.Unlinkat(d.dir, tmp, 0)
			}
			return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: unix.EISDIR}
		case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1:
			if unix.Renameat(d.dir, tmp, d.top, spareName) == nil {
				return nil
			}
		}
	}
	_ = unix.Unlinkat(d.dir, tmp, 0)
	return nil
}
