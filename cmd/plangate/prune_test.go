package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/metrics"
)

// TestGatewayPrunesByRetention: the gateway's pruner, wired as serve wires it, applies
// store.retention by the injected clock at start: an idle conversation's old transcript
// goes, one awaiting a decision keeps its own, and /metrics counts what went.
func TestGatewayPrunesByRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "config.yaml")
	body := defaultTestConfig + "\n" // store.retention keeps its defaults: transcripts 90d
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "demo", "script.yaml"))
	var stderr bytes.Buffer
	e := procEnv{stderr: &stderr, now: func() time.Time { return fixedNow }, getenv: func(k string) string {
		if k == "SCRIPT" {
			return script
		}
		return ""
	}}
	cfg, err := loadConfig(cfgPath, e)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := fixedNow.Add(-100 * 24 * time.Hour)
	for id, phase := range map[string]core.Phase{"idle": core.PhaseOff, "waiting": core.PhaseAwaitingApproval} {
		se := core.Session{ID: id, Address: core.Address{Channel: "fake", Chat: id}, Phase: phase, CreatedAt: old, UpdatedAt: old}
		if _, err := st.Commit(ctx, core.Change{Session: &se}); err != nil {
			t.Fatal(err)
		}
		msgs := []core.ChatMessage{{Role: core.RoleUser, Content: "old", At: old}, {Role: core.RoleAssistant, Content: "old answer", At: old}}
		if _, err := st.Commit(ctx, core.Change{SessionID: id, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New()
	g, err := startGateway(ctx, cfg, e, newLogger(cfg, &stderr), st, channeltest.NewFake("fake"), []string{"fake"}, m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.shutdown(5*time.Second, nil) }()
	for {
		h, err := st.Transcript(ctx, "idle", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the idle conversation's 100-day-old transcript is still there: %+v\n%s", h, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if h, err := st.Transcript(ctx, "waiting", 0); err != nil || len(h) != 2 {
		t.Fatalf("the transcript of a session awaiting a decision = %+v, %v; want both rows kept", h, err)
	}
	if n := sample(t, m, "plangate_store_pruned_rows_total", "table", "messages"); n != 2 {
		t.Fatalf("plangate_store_pruned_rows_total{table=messages} = %v, want 2", n)
	}
}
