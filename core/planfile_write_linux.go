//go:build linux

package core

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// On Linux a rewrite does not create a file. Creating one and freeing the one a rename
// displaced cost ext4 60–150 µs per write, most of a decision's file work; writing 2 KB
// into an existing file and swapping two names costs a tenth. So the file a rewrite
// displaces is kept as the plans directory's spare, and the next write (of any plan file
// under that directory) fills the spare and swaps it with the plan file by
// renameat2(RENAME_EXCHANGE), which leaves the displaced file as the spare in turn.
//
// Reusing a file must not tear a read of it: a reader that opened the plan file before it
// was displaced may still be reading. The spare is filled only under a write lease
// (F_SETLEASE F_WRLCK), which the kernel grants only when no other descriptor anywhere
// refers to the file, and which makes an open that comes later wait until the lease ends,
// after the write. A spare that some reader holds is let go (the reader keeps its copy)
// and the write goes into a new file, as it does where leases or the exchange are not
// available. So a reader sees one whole version, old or new, as with create and rename.
//
// But not necessarily of the file it named: a lease is checked when an open takes its
// descriptor, after it looked the name up. An open can find file X under a.md, be
// preempted, and meanwhile a rewrite of a.md make X the spare and a rewrite of another
// session's b.md fill X (no descriptor yet: the lease is granted) and swap it in as b.md;
// the open then completes on X, holding b.md's plan. So every reader of plan files must
// use ReadWhole (readwhole.go), which reads through its descriptor and then checks that
// the name still refers to the file it holds, and reads again if not.
//
// Two writers (another engine on the same directory, a prepare beside the file writer)
// never fill the same spare or swap the wrong one. What the spare's name refers to
// changes only
//   - by a writer holding flock on the regular file it refers to, after checking under
//     the lock that the name still refers to it (it swaps it in, or lets it go);
//   - by a writer that has just swapped a plan file's old entry into it, when that is not
//     a regular file (a link is removed, a directory put back): no one can lock those;
//   - by installing a displaced file with RENAME_NOREPLACE where there is no spare.
// So between a writer's check and its exchange the name refers to the file it filled.
// All calls take a single path element relative to descriptors of the plans and session
// directories, and none follows a symbolic link.

// spareName is the plans directory's spare: a file an earlier rewrite displaced.
const spareName = ".plangate-spare"

// replace writes data under sessionDir/name in place of what is there. It leaves the
// write to the portable path (false) when the plans or session directory is missing
// (created there) or the session directory is a symbolic link (os.Root follows it if it
// stays inside), or leases are refused.
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
	if done, err := pf.fillSpare(d, name, data); done {
		return true, err
	}
	return true, pf.createAndSwap(d, name, data)
}

// dirPair holds the descriptors of the plans directory (top) and a session's (dir).
type dirPair struct{ top, dir int }

// fillSpare writes data into the spare and swaps it in as name; false when there is no
// spare it may fill, or the spare cannot go into the session directory.
func (pf *planFiles) fillSpare(d dirPair, name string, data []byte) (bool, error) {
	fd, ok := pf.claimSpare(d)
	if !ok {
		return false, nil
	}
	defer unix.Close(fd) // ends the lock, after the swap
	err := fill(fd, data)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	}
	if err != nil {
		return true, &os.PathError{Op: "write", Path: spareName, Err: err}
	}
	if unix.Renameat2(d.top, spareName, d.dir, name, unix.RENAME_EXCHANGE) == nil {
		return true, d.settleDisplaced(name)
	}
	// No file by that name yet, or no exchange here: the spare goes in whole.
	if err := unix.Renameat(d.top, spareName, d.dir, name); err != nil {
		if errors.Is(err, unix.EXDEV) {
			// The session directory is another file system's (a mount point): the spare
			// cannot go there, a file created in it can.
			return false, nil
		}
		return true, &os.LinkError{Op: "rename", Old: spareName, New: name, Err: err}
	}
	return true, nil
}

// claimSpare opens the spare, locked and leased, when it is a regular file linked nowhere
// else that no one holds; a regular file that fails that is let go.
func (pf *planFiles) claimSpare(d dirPair) (int, bool) {
	// O_NONBLOCK: a FIFO under the spare's name must not block the open.
	fd, err := unix.Openat(d.top, spareName, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false // none, or not a file (left to whoever put it there)
	}
	var st, named unix.Stat_t
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil || unix.Fstat(fd, &st) != nil ||
		unix.Fstatat(d.top, spareName, &named, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		st.Dev != named.Dev || st.Ino != named.Ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd) // another writer's, or no longer the spare
		return -1, false
	}
	ok := st.Nlink == 1
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
		_ = unix.Unlinkat(d.top, spareName, 0) // whoever holds it keeps it
		_ = unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// settleDisplaced deals with what the exchange put under the spare's name: a regular
// file stays (the next claim checks it), a directory goes back (renaming a file over one
// fails), anything else is removed, as a rename over it would have.
func (d dirPair) settleDisplaced(name string) error {
	var st unix.Stat_t
	if unix.Fstatat(d.top, spareName, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		_ = unix.Renameat2(d.top, spareName, d.dir, name, unix.RENAME_EXCHANGE)
		return &os.LinkError{Op: "rename", Old: spareName, New: name, Err: unix.EISDIR}
	default:
		_ = unix.Unlinkat(d.top, spareName, 0)
	}
	return nil
}

// createAndSwap writes data into a new file and swaps it in as name; the displaced file
// becomes the spare when there is none.
func (pf *planFiles) createAndSwap(d dirPair, name string, data []byte) error {
	tmp := tempName(name)
	fd, err := unix.Openat(d.dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: tmp, Err: err}
	}
	pf.created.Add(1)
	err = unix.Fchmod(fd, 0o644) // the umask may have narrowed the mode
	if err == nil {
		err = fill(fd, data)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(d.dir, tmp, 0)
		return &os.PathError{Op: "write", Path: tmp, Err: err}
	}
	if unix.Renameat2(d.dir, tmp, d.dir, name, unix.RENAME_EXCHANGE) != nil {
		if err := unix.Renameat(d.dir, tmp, d.dir, name); err != nil {
			_ = unix.Unlinkat(d.dir, tmp, 0)
			return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: err}
		}
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(d.dir, tmp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			if unix.Renameat2(d.dir, tmp, d.dir, name, unix.RENAME_EXCHANGE) == nil {
				_ = unix.Unlinkat(d.dir, tmp, 0)
			}
			return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: unix.EISDIR}
		case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1:
			if unix.Renameat2(d.dir, tmp, d.top, spareName, unix.RENAME_NOREPLACE) == nil {
				return nil
			}
		}
	}
	_ = unix.Unlinkat(d.dir, tmp, 0)
	return nil
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
