package nudges_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
)

// A scheduler claims only schedules of sessions on the channels its process serves: the
// other process's reminders stay unclaimed for it.
func TestSchedulerClaimsOnlyServedChannels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		mine := seed(t, st, "terminal:local:main", remindAt(t0, time.Minute))[0]
		theirs := seed(t, st, "telegram:bot:42", remindAt(t0, time.Minute))[0]
		d := &fakeDeliverer{}
		s := nudges.New(st, d, nudges.Config{Channels: []string{"terminal"}}, testLogger(t))
		stop := start(t, s)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		stop()
		got := d.delivered()
		if len(got) != 1 || got[0].id != mine.ID {
			t.Fatalf("delivered %+v, want only %d", got, mine.ID)
		}
		if n := nudgeByID(t, st, theirs.ID); n.Fired != 0 || n.Status != core.NudgeActive {
			t.Fatalf("another channel's reminder was claimed: %+v", n)
		}
		if n := nudgeByID(t, st, mine.ID); n.Fired != 1 {
			t.Fatalf("own reminder: %+v", n)
		}
	})
}

// nudgeFailSender fails reminders, as a process killed before the platform got one.
type nudgeFailSender struct{ recordingSender }

func (s *nudgeFailSender) Send(ctx context.Context, r core.Reply) (string, error) {
	if r.Kind == core.ReplyNudge {
		return "", errors.New("killed")
	}
	return s.recordingSender.Send(ctx, r)
}

// A reminder claimed but never delivered (the process died) is delivered by the next
// start, once, and `nudges list` (fired) agrees.
func TestClaimedReminderDeliveredAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		st, _ := openStore(t)
		ref := &nudgerRef{}
		g := &gateway{out: &recordingSender{}}
		g.eng = engine.NewEngine(engineCfg(dir), engine.Deps{Store: st, Model: proposingModel(), Out: &nudgeFailSender{}, Nudger: ref, Log: testLogger(t)})
		g.sched = nudges.New(st, g.eng, nudges.Config{}, testLogger(t))
		ref.s = g.sched
		stop := start(t, g.sched)
		g.say(t, "/plan on")
		g.say(t, "plan a changelog")
		time.Sleep(11 * time.Minute)
		synctest.Wait()
		stop()
		ns := listNudges(t, st, mainChat.SessionID())
		if len(ns) != 1 || ns[0].Fired != 1 {
			t.Fatalf("nudges: %+v", ns)
		}

		out := &recordingSender{}
		restarted := engine.NewEngine(engineCfg(dir), engine.Deps{Store: st, Model: proposingModel(), Out: out, Log: testLogger(t)})
		if n, err := restarted.DeliverUnsent(t.Context(), []string{"terminal"}, 0, nil); err != nil || n != 1 {
			t.Fatalf("DeliverUnsent = %d, %v", n, err)
		}
		got := out.all()
		if len(got) != 1 || got[0].Kind != core.ReplyNudge || !strings.Contains(got[0].Text, "has waited 10 min") {
			t.Fatalf("after restart: %+v", got)
		}
		if n, _ := restarted.DeliverUnsent(t.Context(), nil, 0, nil); n != 0 {
			t.Fatalf("delivered again: %d", n)
		}
	})
}

func engineCfg(dir string) engine.Config {
	return engine.Config{PlansDir: filepath.Join(dir, "plans"), WorkspaceRoot: filepath.Join(dir, "ws"), PerSession: true,
		PlanMode: true, Nudges: []time.Duration{10 * time.Minute}}
}
