//go:build linux

package tools

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store/pgtest"
)

// runDir is a directory for host sockets where daemons keep theirs: under /run when the
// test may write there, else a world-traversable directory outside /tmp.
func runDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/run", "plangate-test-")
	if err != nil {
		d = hostDir(t)
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSandboxReachesNoHostSocket: with the host's root bound read-only, a command could
// connect to any unix socket on the host without writing a byte (--unshare-net covers
// only abstract ones).
func TestSandboxReachesNoHostSocket(t *testing.T) {
	needSandbox(t)
	need(t, "curl")
	base := hostDir(t)
	ws := core.Workspace{SessionID: "s1", Dir: filepath.Join(base, "ws")}
	writeTree(t, ws.Dir, map[string]string{"README.md": "x\n"})
	tb := New(Config{RunCommand: true, Allow: []string{"curl"}})
	for name, dir := range map[string]string{"tmp": t.TempDir(), "run": runDir(t), "next to the workspace": base} {
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(dir, "daemon.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"curl", "-sS", "--unix-socket", sock, "-m", "5", "http://daemon/"}})
			if err != nil {
				t.Fatal(err)
			}
			// A connection the command made is queued before the test's own.
			sentinel, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer sentinel.Close()
			first, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			buf := make([]byte, 4)
			_ = sentinel.Close()
			if n, _ := first.Read(buf); n > 0 {
				t.Errorf("the command connected to %s:\n%s", sock, out)
			}
			wantContains(t, "curl", out, "exit code: 7", "Couldn't connect")
		})
	}
}

// TestSandboxReachesNoPostgres: a throwaway PostgreSQL listening on a unix socket outside
// /tmp, as a real server does (/run/postgresql), is neither visible nor reachable, and
// the command changes nothing in its database.
func TestSandboxReachesNoPostgres(t *testing.T) {
	needSandbox(t)
	need(t, "psql", "sh")
	t.Setenv("TMPDIR", runDir(t)) // where pgtest puts the server and its socket
	srv := pgtest.Own(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE victim (v TEXT); INSERT INTO victim VALUES ('keep')"); err != nil {
		t.Fatal(err)
	}
	sockDir := strings.TrimPrefix(strings.Fields(srv.DSN())[0], "host=")
	// Open to everyone, as Debian's /run/postgresql is (a process without capabilities
	// could not pass pgtest's 0700 directory, even as root).
	_ = os.Chmod(sockDir, 0o755)
	ws := testWS(t, nil)
	tb := New(Config{RunCommand: true, Allow: []string{"psql", "sh"}})
	out, err := call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"psql", srv.DSN(), "-c", "DELETE FROM victim"}})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "psql", out, "exit code: 2", "No such file or directory")
	out, err = call(t, tb, ws, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", fmt.Sprintf("ls -a %s; echo end", sockDir)}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, ".s.PGSQL") {
		t.Errorf("the command sees the server's socket:\n%s", out)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM victim").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("victim has %d rows after the command, want 1", n)
	}
}

// TestSandboxHidesOtherSessions: with one workspace per session (workspace.per_session),
// a command in session A's workspace sees none of its siblings, wherever the root lies.
func TestSandboxHidesOtherSessions(t *testing.T) {
	needSandbox(t)
	need(t, "sh", "ls", "cat")
	for name, root := range map[string]string{"outside tmp": hostDir(t), "under tmp": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			writeTree(t, root, map[string]string{
				"telegram-1-a/notes.txt":   "mine\n",
				"telegram-1-b/private.txt": "b secret\n",
				"slack-2-c/private.txt":    "c secret\n",
			})
			a := core.Workspace{SessionID: "a", Dir: filepath.Join(root, "telegram-1-a")}
			tb := New(Config{RunCommand: true, Allow: []string{"ls", "sh"}})
			out, err := call(t, tb, a, ToolRunCommand, map[string]any{"argv": []string{"ls", "-a", ".."}})
			if err != nil {
				t.Fatal(err)
			}
			if want := "$ ls -a ..\nexit code: 0\n.\n..\ntelegram-1-a\n"; out != want {
				t.Errorf("ls -a .. in session a's workspace =\n%s\nwant\n%s", out, want)
			}
			script := "cat notes.txt ../telegram-1-b/private.txt " + filepath.Join(root, "slack-2-c/private.txt") +
				"; echo leak > ../telegram-1-b/private.txt; echo end"
			out, err = call(t, tb, a, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			wantContains(t, "output", out, "mine\n", "end\n", "No such file or directory")
			if strings.Contains(out, "secret") {
				t.Errorf("session a's command read another session's file:\n%s", out)
			}
			wantFile(t, filepath.Join(root, "telegram-1-b/private.txt"), "b secret\n")
		})
	}
}
