package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// sessionLeases lists the session leases stored in dir's database (expired or not).
func sessionLeases(t *testing.T, ctx context.Context, dir string) []core.Lease {
	t.Helper()
	st, err := store.Open(ctx, filepath.Join(dir, "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ls, err := st.ExpiredLeases(ctx, "session:", time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestSIGTERMWhileLingeringLeavesNoLease stops a real serve process with SIGTERM while the
// session lease of the turn it just answered is kept lingering (store.lease_linger): the
// shutdown releases it, so a restarted process or another replica does not wait out the
// ttl for that session.
func TestSIGTERMWhileLingeringLeavesNoLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msrv := httptest.NewServer(&slowModel{})
	defer msrv.Close()
	bot := &fakeBotAPI{}
	bsrv := httptest.NewServer(bot)
	defer bsrv.Close()
	dir := t.TempDir()
	// A linger long enough that the lease is still kept when the signal arrives (under
	// ttl/2, so that it is kept at all).
	cfg := fmt.Sprintf(`store: {path: plangate.db, lease_linger: 10s}
plans: {dir: plans}
llm: {provider: openai, base_url: %q, api_key: k, model: m, timeout: 30s, max_retries: 0}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}", api_url: %q, poll_timeout: 1s}
`, msrv.URL+"/v1", bsrv.URL)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := plangateCmd(t, ctx, dir, "serve")
	cmd.Env = append(cmd.Env, "TELEGRAM_BOT_TOKEN=123:linger-test")
	run, logs := startLogged(t, cmd)
	bot.push(privateMessage(1, "hello"))
	for !strings.Contains(strings.Join(bot.called("sendMessage"), "\n"), "answer: hello") {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for the answer\n%s", logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ls := sessionLeases(t, ctx, dir); len(ls) != 1 {
		t.Fatalf("session leases after the answer: %+v; want the turn's, kept lingering", ls)
	}
	if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	run.wait()
	if out := logs(); !strings.Contains(out, "stopped cleanly") {
		t.Errorf("the stop was not clean:\n%s", out)
	}
	if ls := sessionLeases(t, ctx, dir); len(ls) != 0 {
		t.Fatalf("session leases after SIGTERM: %+v; want none (the shutdown releases kept leases)\n%s", ls, logs())
	}
}
