// Package pgtest starts a throwaway PostgreSQL server for tests, from the installed
// server binaries: initdb into a temporary directory, a server listening only on a unix
// socket in that directory (no TCP port, so tests never collide with another server or
// reach the network; the port number only names the socket), stopped when the test
// binary ends.
//
// One server serves a whole test binary (start it from TestMain with Main); every test
// gets its own schema in it (Schema), which is much cheaper than a database per test.
//
// initdb and postgres refuse to run as root, and CI runs as root: as root the server runs
// as the "postgres" system user (the Debian package creates it). When no server can be
// started, tests skip with the reason, except under CI=true, where they fail: a CI run
// must not pass by testing nothing.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Server is a running throwaway PostgreSQL server.
type Server struct {
	dir  string // holds data/ and the socket
	bin  string
	cred *syscall.Credential // nil when not running as root
	port int

	proc   *exec.Cmd
	exited chan struct{} // closed when proc has exited
}

// Start initializes and starts a server in a new temporary directory.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("creating the server directory: %w", err)
	}
	s := &Server{dir: dir, bin: bin, port: 5432}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("handing the server directory to postgres: %w", err)
		}
	}
	if err := s.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context) error {
	data := filepath.Join(s.dir, "data")
	// --no-sync: a throwaway cluster need not survive a power cut; the server itself
	// keeps fsync on, so benchmarks measure real commits.
	if out, err := s.command(ctx, "initdb", "-D", data, "-A", "trust", "-U", "pg", "-E", "UTF8",
		"--no-sync", "--locale=C.UTF-8").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return s.run(ctx)
}

// run starts the postmaster on the initialized data directory and waits until it is ready.
func (s *Server) run(ctx context.Context) error {
	data := filepath.Join(s.dir, "data")
	// The postmaster is our child (not pg_ctl's), and the kernel stops it when the test
	// binary dies, so a killed or timed-out test run leaves no server behind.
	cmd := s.command(context.Background(), "postgres", "-D", data, "-k", s.dir, "-c", "listen_addresses=",
		"-p", strconv.Itoa(s.port), "-c", "max_connections=200")
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	log, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("creating the server log: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.proc = cmd
	s.exited = make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		out, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("starting postgres: %w\n%s", err, out)
	}
	return nil
}

// waitReady waits until the server accepts connections or exits, for at most 30 s.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.DSN())
		if err == nil {
			return c.Close(ctx)
		}
		select {
		case <-s.exited:
			return errors.New("the server exited")
		case <-ctx.Done():
			return fmt.Errorf("the server is not ready: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) kill() {
	s.proc.Process.Kill()
	<-s.exited
}

// command prepares one server binary, as the postgres user when we are root.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// Stop stops the server (fast shutdown: SIGINT) and removes its directory. Stopping a
// stopped server does nothing.
func (s *Server) Stop() error {
	select {
	case <-s.exited:
		return os.RemoveAll(s.dir)
	default:
	}
	_ = s.Resume() // a stalled server acts on no signal (but SIGKILL) until SIGCONT
	if err := s.proc.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("stopping postgres: %w", err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
	}
	return os.RemoveAll(s.dir)
}

// Halt stops the server as an operator's restart does (fast shutdown: SIGINT; open
// connections get admin_shutdown) and keeps its data, for Boot.
func (s *Server) Halt() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.Resume()
	if err := s.proc.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("stopping postgres: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		s.kill()
		return errors.New("stopping postgres: it did not stop within 30 s and was killed")
	}
}

// Stall freezes the server as a hung host or a paused VM does: SIGSTOP to the postmaster
// and then to every process it started (backends and workers; each leads a session of its
// own, so there is no one process group to signal). Connections stay open and nothing
// answers on them; new connections wait in the socket's backlog. Resume ends it. Stop and
// Halt resume a stalled server first; a test binary killed during a stall leaves the
// stopped children behind (the kernel kills only the postmaster).
func (s *Server) Stall() error {
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	// The postmaster is stopped, so the set of its children holds still while we read it.
	return s.signalChildren(syscall.SIGSTOP)
}

// Resume lets a stalled server run on: SIGCONT to the postmaster's children, then to it.
func (s *Server) Resume() error {
	return errors.Join(s.signalChildren(syscall.SIGCONT), s.signal(syscall.SIGCONT))
}

func (s *Server) signal(sig syscall.Signal) error {
	select {
	case <-s.exited:
		return fmt.Errorf("signalling postgres (%v): it is not running", sig)
	default:
	}
	if err := s.proc.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling postgres (%v): %w", sig, err)
	}
	return nil
}

// signalChildren sends sig to every process whose parent is the postmaster, found in /proc.
func (s *Server) signalChildren(sig syscall.Signal) error {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("listing the server's processes: %w", err)
	}
	parent := strconv.Itoa(s.proc.Process.Pid)
	var errs []error
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != parent {
			continue
		}
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signalling postgres process %d (%v): %w", pid, sig, err))
		}
	}
	return errors.Join(errs...)
}

// Boot starts a server that Halt stopped, on the same data and socket.
func (s *Server) Boot(ctx context.Context) error {
	select {
	case <-s.exited:
	default:
		return errors.New("starting postgres: it is running")
	}
	return s.run(ctx)
}

// DSN is the connection string of database "postgres" as the superuser pg, plus extra
// "key=value" settings (e.g. "search_path=t1").
func (s *Server) DSN(extra ...string) string {
	return strings.Join(append([]string{fmt.Sprintf("host=%s port=%d user=pg dbname=postgres", s.dir, s.port)}, extra...), " ")
}

// NewSchema creates an empty schema and returns a DSN whose connections use it, so
// tests sharing the server never see each other's tables.
func (s *Server) NewSchema(ctx context.Context, name string) (string, error) {
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return "", fmt.Errorf("connecting to the test server: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("creating schema %s: %w", name, err)
	}
	return s.DSN("search_path=" + name), nil
}

func binDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL server binaries (initdb): install Debian's postgresql package or set PG_BIN")
	}
	return filepath.Dir(found[len(found)-1]), nil
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("reading the postgres user's ids: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
	schemas   atomic.Int64
	tables    atomic.Int64 // names Inserts' tables
)

// Main runs the tests of m and then stops the shared server if a test started it. Call
// it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Schema returns a DSN for a fresh schema on the binary's shared server, starting the
// server on first use. Without a server it skips t, or fails it under CI=true.
func Schema(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared, sharedErr = Start(context.Background()) })
	if sharedErr != nil {
		unavailable(t, sharedErr)
	}
	dsn, err := shared.NewSchema(context.Background(), fmt.Sprintf("t%d", schemas.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Own starts a server of t's own (for a test that stops it), stopped at the end of t.
// Without a server it skips t, or fails it under CI=true.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL tests cannot run under CI: %v", err)
	}
	t.Skipf("skipping PostgreSQL test: %v", err)
}

// Inserts creates a table of its own in pool's schema and returns a single-row insert
// transaction on it (BEGIN, INSERT, COMMIT: three round trips, one commit), the ceiling
// the benchmarks compare PostgreSQL's commits with.
func Inserts(t testing.TB, pool *pgxpool.Pool) func(i int) error {
	t.Helper()
	ctx := context.Background()
	table := pgx.Identifier{fmt.Sprintf("raw_%d", tables.Add(1))}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return func(i int) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (v) VALUES ($1)`, fmt.Sprint(i)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
}
