package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// walSync makes SQLite commits durable outside the writer, as databases' group commit
// flushes the log outside the lock that orders its writes.
//
// Every writer transaction runs at synchronous=NORMAL: in WAL mode its COMMIT appends its
// frames and commit marker to the -wal file with write(), no fsync, and releases the
// writer. A durable caller then waits here (ticket, then wait) for an fsync of that file
// that BEGAN after its commit returned, run by one of the waiting callers: lazy batches
// keep committing meanwhile, and a caller arriving during an fsync waits for the next,
// which covers every commit made before it began. So the contract of synchronous=FULL
// holds: durable before the caller is told.
//
// Why an fsync of our own descriptor covers SQLite's frames (SQLite 3.54, wal.c):
//   - fsync and fdatasync flush the inode's dirty pages, whoever wrote them, and
//     fdatasync includes the file size. The file is opened once the writer put it in WAL
//     mode, and SQLite deletes the -wal only when the last connection closes, after a
//     full checkpoint; wal_checkpoint(TRUNCATE) and journal_size_limit truncate it in
//     place (same inode). Should the path name another file, syncFile reopens it: the
//     old one was deleted only after its frames were checkpointed and synced.
//   - A WAL restart writes the new header and syncs it itself at any level (walFrames,
//     CKPT_SYNC_FLAGS), so no later frame reaches the disk before a header validating it.
//   - A checkpoint at NORMAL syncs the WAL before copying frames into the database file,
//     and that file after: it never needs our fsync.
//   - Recovery replays frames up to the last valid commit marker, checksums chained from
//     the header: a commit survives when every byte before its marker is on disk, all
//     written before the commit returned (one writer at a time holds the WAL lock), so
//     an fsync begun after that covers it.
//   - Without padding (SQLITE_POWERSAFE_OVERWRITE, the default) a FULL commit's fsync is
//     the same fsync of the same bytes.
//
// An fsync error fails its waiters and every later durable write: after a failed fsync
// Linux may have dropped the dirty pages, so a retry can succeed without writing them,
// and a lost frame ends the WAL's checksum chain at recovery, taking every later commit
// with it. The first error is kept (Health) and never retried; lazy writes go on.
type walSync struct {
	path  string
	fsync func(*os.File) error // fdatasync (see datasync); tests replace it

	mu   sync.Mutex
	cond *sync.Cond
	f    *os.File // the -wal file; nil after close or a failed reopen (see syncFile)
	// started is the generation of the last fsync begun, done of the last that completed
	// without error; one runs at a time (running).
	started, done uint64
	running       bool
	closed        bool
	waiting       int   // callers in wait, for tests
	err           error // the first fsync failure, kept
	syncs, waited int64 // fsyncs run; durable writes that waited for one
}

// openWALSync opens the -wal file of the database at abs, which the writer created.
func openWALSync(abs string) (*walSync, error) {
	w := &walSync{path: abs + "-wal", fsync: datasync}
	w.cond = sync.NewCond(&w.mu)
	f, err := openWAL(w.path)
	if err != nil {
		return nil, fmt.Errorf("opening the WAL file to sync it: %w", err)
	}
	w.f = f
	return w, nil
}

// ticket names the first fsync that begins after now. Called once a commit returned, an
// fsync of that generation or later covers the commit: the one in flight, if any, may
// have begun before it.
func (w *walSync) ticket() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started + 1
}

// wait returns once the fsync named by t, or a later one, completed: at once if one did,
// after the one in flight otherwise, running the next fsync itself when none is. It
// returns the kept error when an fsync failed before t was covered.
func (w *walSync) wait(t uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waited++
	w.waiting++
	defer func() { w.waiting-- }()
	for {
		switch {
		case w.done >= t:
			return nil
		case w.err != nil:
			return w.err
		case w.closed:
			return errors.New("syncing the write-ahead log: the store is closed")
		case w.running:
			w.cond.Wait()
		default:
			w.run()
		}
	}
}

// run performs the next fsync without holding mu; it is called, and returns, holding it.
func (w *walSync) run() {
	w.running = true
	w.started++
	gen := w.started
	w.mu.Unlock()
	err := w.syncFile()
	w.mu.Lock()
	w.running = false
	w.syncs++
	if err == nil {
		w.done = gen
	} else if w.err == nil {
		w.err = fmt.Errorf("syncing the write-ahead log %s: %w (the store can no longer make writes durable; restart plangate once the disk is fixed)", w.path, err)
	}
	w.cond.Broadcast()
}

// syncFile fsyncs the -wal file, reopening it first if the path names another file than
// the one held (see walSync: a replaced WAL was checkpointed and synced before it went).
// No -wal file at all means nothing is waiting in one. Only the running fsync calls it.
func (w *walSync) syncFile() error {
	cur, err := os.Stat(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if w.f != nil {
		held, err := w.f.Stat()
		if err != nil {
			return err
		}
		if !os.SameFile(held, cur) {
			w.f.Close()
			w.f = nil
		}
	}
	if w.f == nil {
		if w.f, err = openWAL(w.path); err != nil {
			return err
		}
	}
	return w.fsync(w.f)
}

// failed returns the kept error, nil while fsyncs succeed.
func (w *walSync) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// close closes the -wal file once no fsync runs.
func (w *walSync) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.running {
		w.cond.Wait()
	}
	w.closed = true
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Health reports why the store can no longer make writes durable (an fsync of the
// write-ahead log failed), or nil. On PostgreSQL it is always nil: the server reports
// its own failures to each commit.
func (s *Store) Health() error {
	if s.ws == nil {
		return nil
	}
	return s.ws.failed()
}

// openWAL opens the -wal file for syncing: read-write, since Windows flushes only a
// handle with write access (Linux and macOS would take a read-only one).
func openWAL(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR, 0)
}
