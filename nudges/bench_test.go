package nudges

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// nopDeliverer is never called: the benchmark only loads.
type nopDeliverer struct{}

func (nopDeliverer) Nudge(context.Context, core.Nudge, time.Time) error { return nil }

func (nopDeliverer) ReportMissed(context.Context, string, []core.MissedNudge) error { return nil }

// BenchmarkNudgeRestore measures start-up with 100,000 active schedules in the database:
// the time to load them into the scheduler and the heap it holds per schedule afterwards.
// Each of 5,000 sessions (Telegram-style ids) has six plans with three one-shot reminders,
// an approval timeout and a recurring schedule, all in the future.
func BenchmarkNudgeRestore(b *testing.B) {
	const sessions, plansPer = 5000, 6
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "plangate.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Second)
	total := 0
	for i := range sessions {
		sid := fmt.Sprintf("telegram:7123456789:-100%010d:%d", i*7919, i%50)
		var ns []core.Nudge
		for p := range plansPer {
			for _, d := range []time.Duration{10 * time.Minute, 30 * time.Minute, time.Hour} {
				ns = append(ns, core.Nudge{PlanID: fmt.Sprintf("p_%s_%d", sid[len(sid)-12:], p), Kind: core.NudgeOnce,
					Action: core.NudgeRemind, Spec: d.String(), NextFireAt: now.Add(d + time.Duration(i)*time.Second), CreatedAt: now})
			}
		}
		ns = append(ns,
			core.Nudge{PlanID: "p_last", Kind: core.NudgeOnce, Action: core.NudgeExpire, Spec: "24h0m0s", NextFireAt: now.Add(24 * time.Hour), CreatedAt: now},
			core.Nudge{PlanID: "p_last", Kind: core.NudgeRecurring, Action: core.NudgeRemind, Spec: "CRON_TZ=Europe/Berlin 0 9 * * 1-5",
				NextFireAt: now.Add(48 * time.Hour), CreatedAt: now})
		if _, err := st.Commit(ctx, core.Change{Session: &core.Session{ID: sid, Phase: core.PhaseAwaitingApproval}, Nudges: ns}); err != nil {
			b.Fatal(err)
		}
		total += len(ns)
	}

	var loaded int
	var perSchedule float64
	for b.Loop() {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New(st, nopDeliverer{}, Config{}, nil)
		b.StartTimer()

		n, err := s.load(ctx)
		if err != nil {
			b.Fatal(err)
		}

		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		loaded = n
		perSchedule = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
		runtime.KeepAlive(s)
		b.StartTimer()
	}
	if loaded != total {
		b.Fatalf("loaded %d schedules, want %d", loaded, total)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
	b.ReportMetric(perSchedule, "B/schedule")
	b.ReportMetric(float64(loaded), "schedules")
}
