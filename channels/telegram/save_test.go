package telegram

import (
	"slices"
	"strconv"
	"testing"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// onFullDisk is an env whose adapter saves through disk, which starts full; the engine
// writes to the store directly, so its commits work.
func onFullDisk(disk *diskState) func(*env) {
	disk.full.Store(true)
	return func(e *env) {
		e.wrap = func(st channels.State) channels.State {
			if disk.State == nil {
				disk.State = st
				return disk
			}
			return st // a restart: a killed process's disk is of no more use
		}
	}
}

// confirms reports whether a getUpdates call has confirmed update id to Telegram.
func (e *env) confirms(id int64) bool {
	past := strconv.FormatInt(id+1, 10)
	return slices.ContainsFunc(e.api.callsOf("getUpdates"), func(c apiCall) bool { return c.Params["offset"] == past })
}

// An update is handed to the engine while its save runs, so the engine may answer it
// before it is stored. When the save fails and the process is killed, nothing was
// confirmed: Telegram serves the update again at the next start, and the engine, which
// committed its answer with the update's key, does not answer it twice.
func TestAnsweredBeforeItsFailedSaveIsNotAnsweredTwice(t *testing.T) {
	disk := &diskState{}
	e := newEnv(t, onFullDisk(disk))
	sid := e.sessionID(private)
	e.Model.Push(sid, core.ModelResponse{Text: "answer one"})
	first := e.api.say(private, alice, "first message")
	e.api.waitText(private, "answer one")
	e.Idle()
	e.Eventually("failed saves", func() bool { return disk.failed.Load() >= 3 })
	if e.confirms(first) {
		t.Fatal("the update was confirmed although it was never stored")
	}
	if n := len(e.api.callsOf("getUpdates")); n != 1 {
		t.Errorf("%d getUpdates while the save fails, want the one that got the update", n)
	}

	e.Crash() // killed: its final save fails too, and the dead adapter saves nothing more
	e.Model.Push(sid, core.ModelResponse{Text: "answer two"})
	e.Start()
	second := e.api.say(private, alice, "second message")
	e.api.waitText(private, "answer two")
	e.Idle()
	e.waitInbox(func(s savedInbox) bool { return len(s.Pending) == 0 && s.Handled >= second })
	e.Eventually("both updates confirmed", func() bool { return e.confirms(second) })

	msgs := e.api.messages(private)
	if n := countContaining(msgs, "answer one"); n != 1 {
		t.Errorf("%q shown %d times, want once", "answer one", n)
	}
	if n := e.Model.CallCount(); n != 2 {
		t.Errorf("the model was called %d times, want 2 (the redelivered update is a duplicate)", n)
	}
	if served := e.api.callsOf("getUpdates"); len(served) < 2 || served[1].Params["offset"] != "0" {
		t.Errorf("the restart did not ask Telegram again from the unconfirmed update: %v", served)
	}
}

// The engine starts on an update before it is stored, and its confirmation to Telegram
// waits for the save, not for the engine: while the save fails nothing is confirmed and
// Telegram is not asked again (a redelivery would race the turn); once the save works the
// update is confirmed while its turn still runs, and it is answered once.
func TestSaveAndTurnOverlap(t *testing.T) {
	disk := &diskState{}
	e := newEnv(t, onFullDisk(disk))
	sid := e.sessionID(private)
	block := make(chan struct{})
	e.Model.Block(block)
	e.Model.Push(sid, core.ModelResponse{Text: "the only answer"})
	calls := make(chan struct{}, 4)
	e.Model.Hook(func(core.ModelRequest) { calls <- struct{}{} })
	id := e.api.say(private, alice, "a message")
	<-calls // the turn is in its model call, held there
	e.Eventually("failed saves", func() bool { return disk.failed.Load() >= 3 })
	if e.confirms(id) || len(e.api.callsOf("getUpdates")) != 1 {
		t.Fatalf("while the save fails: getUpdates %v, want only the one that got the update", e.api.callsOf("getUpdates"))
	}

	disk.full.Store(false)
	e.Eventually("the update confirmed while its turn runs", func() bool { return e.confirms(id) })
	s := e.waitInbox(func(s savedInbox) bool { return s.Next > id })
	if len(s.Pending) != 1 {
		t.Errorf("the saved inbox holds %d updates while the turn runs, want the one", len(s.Pending))
	}
	close(block)
	e.api.waitText(private, "the only answer")
	e.Idle()
	if n := countContaining(e.api.messages(private), "the only answer"); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
	if len(calls) != 0 {
		t.Errorf("the model was called %d more times, want once in all", len(calls))
	}
}
