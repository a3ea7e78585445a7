package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/channeltest"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/metrics"
	"github.com/plangate/plangate/core/metrics/metricstest"
)

// sample is a counter's or gauge's value, or a histogram's sample count, of the series of
// name whose labels include the given pairs (0 when there is none).
func sample(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	return metricstest.Sample(t, m, name, labels...)
}

// TestMetricsCountRealTraffic wires the engine, the store and a Hub over a fake channel to
// one Metrics as serve does, drives the demo script through a plan's whole life and checks
// each counter moved by what really happened.
func TestMetricsCountRealTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(defaultTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "demo", "script.yaml"))
	var stderr bytes.Buffer
	e := procEnv{stderr: &stderr, now: func() time.Time { return fixedNow }, getenv: func(k string) string {
		switch k {
		case "SCRIPT":
			return script
		case "SEED":
			return demoSeed(t)
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
	m := metrics.New()
	st.OnCommit(m.StoreCommit)
	fake := channeltest.NewFake("fake")
	hub := channels.NewHub(nil, fake)
	hub.OnReply(m.Reply)
	g, err := startGateway(ctx, cfg, e, newLogger(cfg, &stderr), st, hub, []string{"fake"}, m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.shutdown(5*time.Second, nil) }()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go func() { _ = hub.Run(runCtx, workHandler{eng: g.eng, ctx: ctx}) }()

	alice := core.Person{ID: "u1", Name: "alice"}
	addr := core.Address{Channel: "fake", Chat: "c1"}
	deliver := func(id, text string, from core.Person) {
		t.Helper()
		if err := fake.Deliver(ctx, core.Message{ID: id, Address: addr, Sender: from, Text: text}); err != nil {
			t.Fatalf("delivering %q: %v", text, err)
		}
	}

	// A request: the demo agent looks around, tries a write (blocked) and proposes a plan.
	deliver("e1", "please clean up the docs", alice)
	deliver("e1", "please clean up the docs", alice) // the platform redelivers it
	deliver("e2", "a bot talking", core.Person{ID: "b1", IsBot: true})
	if got := sample(t, m, "plangate_plans_pending"); got != 1 {
		t.Errorf("plans pending after the proposal: %v, want 1", got)
	}
	if got := sample(t, m, "plangate_tool_calls_total", "tool", "write_file", "outcome", "blocked"); got != 1 {
		t.Errorf("blocked write_file calls: %v, want 1", got)
	}
	for _, tool := range []string{"list_files", "read_file", "search_files"} { // read-only calls count too
		if got := sample(t, m, "plangate_tool_calls_total", "tool", tool, "outcome", "ran"); got < 1 {
			t.Errorf("%s calls counted: %v, want at least 1", tool, got)
		}
	}
	proposalCalls := sample(t, m, "plangate_model_request_seconds", "outcome", "ok")
	if proposalCalls != 6 { // the six turns of the demo script that answer a request
		t.Errorf("model requests for the proposal: %v, want 6", proposalCalls)
	}

	// A reminder for the pending plan fires; one that was due while down is reported.
	sid := addr.SessionID()
	sess, err := st.Session(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := st.PlanByApproval(ctx, sess.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	n := core.Nudge{SessionID: sid, PlanID: plan.ID, Kind: core.NudgeOnce, Action: core.NudgeRemind, Spec: "10m", Status: core.NudgeActive}
	if err := g.eng.Nudge(ctx, n, fixedNow); err != nil {
		t.Fatal(err)
	}
	if err := g.eng.ReportMissed(ctx, sid, []core.MissedNudge{{Nudge: n, ScheduledAt: fixedNow}}); err != nil {
		t.Fatal(err)
	}

	// The owner accepts: the plan runs (its writes execute) and nothing waits any more.
	deliver("e3", "/plan accept", alice)
	if err := g.eng.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	// Replies the Hub cannot deliver: to a channel it lacks, and one the platform refuses.
	if _, err := hub.Send(ctx, core.Reply{To: core.Address{Channel: "nope", Chat: "c1"}, Text: "x"}); err == nil {
		t.Error("a reply to an unknown channel was sent")
	}
	fake.FailSend(errors.New("platform down"))
	if _, err := hub.Send(ctx, core.Reply{To: addr, Text: "x"}); err == nil {
		t.Error("a reply the platform refused was sent")
	}

	sent := float64(len(fake.Replies()) + len(fake.Edits())) // an edit in place is a reply sent
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"plangate_inbound_total", []string{"channel", "fake", "outcome", "handled"}, 2},
		{"plangate_inbound_total", []string{"channel", "fake", "outcome", "duplicate"}, 1},
		{"plangate_inbound_total", []string{"channel", "fake", "outcome", "refused"}, 1},
		{"plangate_inbound_total", []string{"channel", "fake", "outcome", "failed"}, 0},
		{"plangate_replies_total", []string{"channel", "fake", "outcome", "sent"}, sent},
		{"plangate_replies_total", []string{"channel", "fake", "outcome", "failed"}, 1},
		{"plangate_replies_total", []string{"channel", "nope", "outcome", "dropped"}, 1},
		{"plangate_decisions_total", []string{"kind", "accepted"}, 1},
		{"plangate_plans_pending", nil, 0},
		{"plangate_model_request_seconds", []string{"outcome", "error"}, 0},
		{"plangate_nudges_total", []string{"outcome", "fired"}, 1},
		{"plangate_nudges_total", []string{"outcome", "missed"}, 1},
		{"plangate_tool_calls_total", []string{"tool", "write_file", "outcome", "blocked"}, 1},
	} {
		if got := sample(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if sent < 3 {
		t.Errorf("only %v replies reached the fake", sent)
	}
	// The accepted "Docs cleanup" makes three edits, all within its scope.
	if got := sample(t, m, "plangate_tool_calls_total", "tool", "edit_file", "outcome", "ran"); got != 3 {
		t.Errorf("edit_file calls that ran: %v, want 3", got)
	}
	if got := sample(t, m, "plangate_tool_calls_total", "outcome", "failed"); got != 0 {
		t.Errorf("tool calls that failed: %v, want 0", got)
	}
	if got := sample(t, m, "plangate_model_request_seconds", "outcome", "ok"); got <= proposalCalls {
		t.Errorf("the accepted plan's turns made no model request (%v in all)", got)
	}
	durable := sample(t, m, "plangate_store_commit_seconds", "durable", "true")
	lazy := sample(t, m, "plangate_store_commit_seconds", "durable", "false")
	if durable < 2 || lazy < 1 { // the proposal and the acceptance are durable; messages lazy
		t.Errorf("store commits: %v durable, %v lazy", durable, lazy)
	}
}
