package channels

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/plangate/plangate/core"
)

type testMsg struct {
	Chat string `json:"chat"`
	ID   string `json:"id"`
}

func TestLedger(t *testing.T) {
	ctx := context.Background()
	st := &fakeState{}
	l := NewLedger[testMsg](st, "test", "bot1", nil)
	plan := core.Reply{Buttons: []core.Button{
		{Action: core.Action{Kind: core.ActionAccept, ApprovalID: "a1"}},
		{Action: core.Action{Kind: core.ActionRevise, ApprovalID: "a1"}},
		{Action: core.Action{Kind: core.ActionAnswer, ApprovalID: "q1"}},
		{Action: core.Action{Kind: core.ActionAuto, ApprovalID: "a2"}},
	}}
	ids := ApprovalIDs(plan)
	if len(ids) != 2 || ids[0] != "a1" || ids[1] != "a2" {
		t.Fatalf("ApprovalIDs = %q, want [a1 a2]", ids)
	}
	l.Add(ctx, ids, testMsg{Chat: "c", ID: "m1"})
	l.Add(ctx, []string{"a1"}, testMsg{Chat: "c", ID: "m2"}) // a nudge repeating the buttons

	var retired []string
	err := l.Retire(ctx, core.Reply{Ref: "a1", Text: "accepted"}, func(_ context.Context, m testMsg) error {
		retired = append(retired, m.ID)
		if m.ID == "m2" {
			return errors.New("message gone")
		}
		return nil
	})
	if len(retired) != 2 || retired[0] != "m1" || retired[1] != "m2" || err == nil {
		t.Errorf("retired %q with %v, want m1 and m2 and m2's failure", retired, err)
	}
	rec, ok, err := l.Load(ctx, "a1")
	if err != nil || !ok || rec.Decided != "accepted" {
		t.Errorf("record after the decision = %+v, %v, %v; want the decision kept", rec, ok, err)
	}
	if err := l.Retire(ctx, core.Reply{Ref: "never"}, func(context.Context, testMsg) error {
		t.Error("retired a message of an approval never sent")
		return nil
	}); err != nil {
		t.Errorf("retiring an unknown approval: %v", err)
	}
	if _, ok, _ := NewLedger[testMsg](st, "test", "bot2", nil).Load(ctx, "a1"); ok {
		t.Error("another bot account sees this one's record")
	}
}

// legacyMsg names its chat; records written before kept it once per approval.
type legacyMsg struct {
	Chat int64 `json:"chat"`
	ID   int   `json:"id"`
}

func (m *legacyMsg) UpgradeChat(chat json.RawMessage) {
	if m.Chat == 0 {
		_ = json.Unmarshal(chat, &m.Chat)
	}
}

func TestLedgerReadsRecordsThatKeptTheChatOnce(t *testing.T) {
	ctx := context.Background()
	st := &fakeState{}
	if err := st.SetChannelState(ctx, "test", "bot1", "approval:old", `{"chat":-100,"thread":4,"msgs":[{"id":7}]}`); err != nil {
		t.Fatal(err)
	}
	l := NewLedger[legacyMsg](st, "test", "bot1", nil)
	l.Add(ctx, []string{"old"}, legacyMsg{Chat: -100, ID: 8}) // a nudge after the upgrade
	var retired []legacyMsg
	if err := l.Retire(ctx, core.Reply{Ref: "old", Text: "accepted"}, func(_ context.Context, m legacyMsg) error {
		retired = append(retired, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(retired) != 2 || retired[0] != (legacyMsg{Chat: -100, ID: 7}) || retired[1] != (legacyMsg{Chat: -100, ID: 8}) {
		t.Errorf("retired %+v, want messages 7 and 8 in chat -100", retired)
	}
}
