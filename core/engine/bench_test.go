package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// BenchmarkEngineCommands drives /plan status, on, revise and accept cycles through the
// engine with the real SQLite store (decisions fsynced) and a model that answers at once.
// msgs/s counts every message; decisions/s counts revise and accept.
func BenchmarkEngineCommands(b *testing.B) {
	h := newHarness(b)
	ctx := context.Background()
	send := func(chat, text string) {
		m := core.Message{Address: addr(chat), Sender: core.Person{ID: "local"}, Text: text}
		if err := h.eng.Handle(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	msgs, decisions := 0, 0
	i := 0
	for b.Loop() {
		chat := fmt.Sprintf("bench-%d", i)
		sid := sessionID(chat)
		h.model.push(sid,
			calls(propose("Bench plan", "A", "B")),
			calls(propose("Bench plan v2", "A", "B", "C")),
			text("accepted"))
		send(chat, "/plan status")
		send(chat, "/plan on do the thing")
		send(chat, "/plan status")
		send(chat, "/plan revise add C")
		send(chat, "/plan accept")
		msgs += 5
		decisions += 2
		i++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(msgs)/sec, "msgs/s")
	b.ReportMetric(float64(decisions)/sec, "decisions/s")
}

// BenchmarkPlanStatus is the read-only path: no transaction, no disk write.
func BenchmarkPlanStatus(b *testing.B) {
	h := newHarness(b)
	h.toPending("main", "Status bench")
	ctx := context.Background()
	m := core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan status"}
	n := 0
	for b.Loop() {
		if err := h.eng.Handle(ctx, m); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkPlanStatusWithEventIDs is /plan status as platforms send it, with an event
// id: the answer and the id are one lazy (non-fsync) commit, so a replay is not answered
// twice. Compare msgs/s with BenchmarkPlanStatus.
func BenchmarkPlanStatusWithEventIDs(b *testing.B) {
	h := newHarness(b)
	h.toPending("main", "Status bench")
	ctx := context.Background()
	n := 0
	for b.Loop() {
		m := core.Message{ID: fmt.Sprintf("ev-%d", n), Address: addr("main"), Sender: core.Person{ID: "local"}, Text: "/plan status"}
		if err := h.eng.Handle(ctx, m); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkEngineDecisions times /plan accept alone: the decision commit, the plan file
// refresh and the agent turn it starts (a model that answers at once). Reaching the
// pending plans is set up outside the timer. sessions=1 decides one at a time;
// sessions=20 has twenty sessions deciding at once, whose commits the store groups.
// Reported beside decisions/s: raw-commits/s, the rate of single-row fsynced commits on
// the same disk measured in the same run (before and after, averaged), and ratio, the
// first divided by the second.
//
// acked=true times the decision alone, as the person sees it: from /plan accept arriving
// to its commit being durable and "Accepted plan …" sent. The agent turns the decisions
// start wait at the model until the timer stops and finish outside it (their lease is
// taken inside). A decision's own writes are the same; what it leaves out is the turn.
//
// The postgres/ cases run the same on PostgreSQL (a throwaway server, pgtest), and
// compare with single-row insert transactions on that server: raw-commits/s from as many
// goroutines as sessions decide at once (the server groups their WAL flushes as it groups
// the decisions'), raw-serial-commits/s from one.
func BenchmarkEngineDecisions(b *testing.B) {
	for _, driver := range []string{store.DriverSQLite, store.DriverPostgres} {
		for _, acked := range []bool{false, true} {
			for _, sessions := range []int{1, 20} {
				name := fmt.Sprintf("sessions=%d", sessions)
				if acked {
					name += "/acked"
				}
				if driver != store.DriverSQLite {
					name = driver + "/" + name
				}
				b.Run(name, func(b *testing.B) { benchDecisions(b, driver, sessions, acked) })
			}
		}
	}
}
