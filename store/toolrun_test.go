package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
)

// A run is started once, finished once, listed while unfinished, and pruned only once
// finished and old.
func TestToolRunLifecycleAndPrune(t *testing.T) {
	st, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	run := core.ToolRun{SessionID: "s", CallID: "c1#x", Tool: "write_file", Detail: "write_file on a.md", StartedAt: t0}
	if err := st.StartToolRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.StartToolRun(ctx, run); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("second start: %v, want ErrDuplicate", err)
	}
	open := core.ToolRun{SessionID: "s", CallID: "c2#y", Tool: "run_command", Detail: "run_command sleep 9", StartedAt: t0}
	if err := st.StartToolRun(ctx, open); err != nil {
		t.Fatal(err)
	}
	run.Outcome, run.FinishedAt = core.ToolRunOK, t0.Add(time.Second)
	if err := st.FinishToolRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if got, err := st.UnfinishedToolRuns(ctx, "s"); err != nil || len(got) != 1 || got[0].CallID != "c2#y" {
		t.Fatalf("unfinished: %+v, %v", got, err)
	}
	if n, err := st.PruneToolRuns(ctx, t0); err != nil || n != 0 {
		t.Fatalf("prune before anything is old: %d, %v", n, err)
	}
	if n, err := st.PruneToolRuns(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want the finished run only", n, err)
	}
	if got, _ := st.ToolRunsOf(ctx, "s"); len(got) != 1 || got[0].CallID != "c2#y" {
		t.Fatalf("left after prune: %+v", got)
	}
}
