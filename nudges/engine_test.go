package nudges_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/nudges"
	"github.com/plangate/plangate/store"
)

// sentReply is a reply with the time it was sent.
type sentReply struct {
	core.Reply
	at time.Time
}

// recordingSender is a core.Sender that keeps every reply.
type recordingSender struct {
	mu      sync.Mutex
	replies []sentReply
}

func (r *recordingSender) Send(_ context.Context, rep core.Reply) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies = append(r.replies, sentReply{rep, time.Now()})
	return "m", nil
}

func (r *recordingSender) all() []sentReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentReply(nil), r.replies...)
}

// proposingModel proposes a plan at its first call and answers "ok" afterwards.
func proposingModel() *coretest.Model {
	m := coretest.NewModel()
	m.Push(mainChat.SessionID(), coretest.Proposal("Add a changelog", "Create CHANGELOG.md"))
	return m
}

// nudgerRef breaks the wiring cycle: the engine needs the scheduler as its Nudger, and
// the scheduler needs the engine as its Deliverer.
type nudgerRef struct{ s *nudges.Scheduler }

func (r *nudgerRef) SessionChanged(ctx context.Context, id string) { r.s.SessionChanged(ctx, id) }

// gateway is an engine and a scheduler on one store, wired as plangate wires them.
type gateway struct {
	eng   *engine.Engine
	sched *nudges.Scheduler
	out   *recordingSender
}

func newGateway(t *testing.T, st *store.Store, dir string, cfg engine.Config, grace time.Duration) *gateway {
	cfg.PlansDir, cfg.WorkspaceRoot, cfg.PerSession, cfg.PlanMode = filepath.Join(dir, "plans"), filepath.Join(dir, "ws"), true, true
	ref := &nudgerRef{}
	g := &gateway{out: &recordingSender{}}
	g.eng = engine.NewEngine(cfg, engine.Deps{Store: st, Model: proposingModel(), Out: g.out, Nudger: ref, Log: testLogger(t)})
	g.sched = nudges.New(st, g.eng, nudges.Config{Grace: grace}, testLogger(t))
	ref.s = g.sched
	return g
}

var mainChat = core.Address{Channel: "terminal", Account: "local", Chat: "main"}

func (g *gateway) say(t *testing.T, text string) {
	t.Helper()
	m := core.Message{Address: mainChat, Sender: core.Person{ID: "local", Name: "local"}, Text: text, Time: time.Now()}
	if err := <-g.eng.Enqueue(context.Background(), m); err != nil {
		t.Fatalf("handling %q: %v", text, err)
	}
}

// TestEngineRemindsThenExpires runs the real engine: a plan waits, gets its reminder, and
// expires at the approval timeout, which sends the session back to planning.
func TestEngineRemindsThenExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		st, _ := openStore(t)
		t0 := time.Now()
		g := newGateway(t, st, dir, engine.Config{Nudges: []time.Duration{10 * time.Minute}, ApprovalTimeout: time.Hour}, 0)
		stop := start(t, g.sched)
		g.say(t, "/plan on")
		g.say(t, "plan a changelog")
		sess, err := st.Session(t.Context(), mainChat.SessionID())
		if err != nil || sess.Phase != core.PhaseAwaitingApproval {
			t.Fatalf("setup: session %+v, %v", sess, err)
		}
		planID := sess.PlanID
		before := len(g.out.all())

		time.Sleep(2 * time.Hour)
		synctest.Wait()
		stop()

		var nudgesSeen, expiries []sentReply
		for _, r := range g.out.all()[before:] {
			switch {
			case r.Kind == core.ReplyNudge:
				nudgesSeen = append(nudgesSeen, r)
			case r.Kind == core.ReplyNotice && strings.Contains(r.Text, "expired"):
				expiries = append(expiries, r)
			case r.at.Sub(t0) != time.Hour:
				// Other replies (such as the plan message marked decided) follow the expiry.
				t.Errorf("unexpected reply at +%s: %q", r.at.Sub(t0), r.Text)
			}
		}
		if len(nudgesSeen) != 1 || nudgesSeen[0].at.Sub(t0) != 10*time.Minute ||
			!strings.Contains(nudgesSeen[0].Text, `"Add a changelog" has waited 10 min`) || !strings.Contains(nudgesSeen[0].Text, "/plan accept") {
			t.Errorf("reminders: %+v, want one at +10m naming the plan, its wait and the commands", nudgesSeen)
		}
		if len(expiries) != 1 || expiries[0].at.Sub(t0) != time.Hour {
			t.Errorf("expiry notices: %+v, want one at +1h", expiries)
		}
		sess, err = st.Session(t.Context(), mainChat.SessionID())
		if err != nil {
			t.Fatal(err)
		}
		p, err := st.Plan(t.Context(), planID)
		if err != nil {
			t.Fatal(err)
		}
		if sess.Phase != core.PhasePlanning || p.Status != core.PlanExpired {
			t.Errorf("after the timeout: phase %s, plan %s; want planning, expired", sess.Phase, p.Status)
		}
		for _, n := range listNudges(t, st, sess.ID) {
			if n.Status == core.NudgeActive {
				t.Errorf("nudge %d still active after the plan expired", n.ID)
			}
		}
	})
}

// TestEngineRestartReportsMissed stops plangate while a plan waits and starts it again
// later: the chat gets one message listing the missed reminder, then the one still within
// the grace period.
func TestEngineRestartReportsMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		st, _ := openStore(t)
		t0 := time.Now()
		cfg := engine.Config{Nudges: []time.Duration{10 * time.Minute, 30 * time.Minute}}
		g := newGateway(t, st, dir, cfg, 15*time.Minute)
		stop := start(t, g.sched)
		g.say(t, "/plan on")
		g.say(t, "plan a changelog")
		stop()

		time.Sleep(40 * time.Minute)
		g2 := newGateway(t, st, dir, cfg, 15*time.Minute)
		stop = start(t, g2.sched)
		synctest.Wait()
		stop()
		got := g2.out.all()
		if len(got) != 2 {
			t.Fatalf("after the restart got %d replies, want 2: %+v", len(got), got)
		}
		if !strings.Contains(got[0].Text, "1 reminder was missed (due 2000-01-01 00:10 UTC)") || !strings.Contains(got[0].Text, "still waiting") {
			t.Errorf("first reply %q, want the missed report", got[0].Text)
		}
		if got[1].Kind != core.ReplyNudge || !strings.Contains(got[1].Text, "has waited 40 min") {
			t.Errorf("second reply %q, want the 30m reminder, 10 minutes late", got[1].Text)
		}
		for _, r := range got {
			if r.at != t0.Add(40*time.Minute) {
				t.Errorf("reply sent at +%s, want at start-up", r.at.Sub(t0))
			}
		}
	})
}
