package channels

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

func TestButtons(t *testing.T) {
	bs := []core.Button{
		{Label: " Accept ", Action: core.Action{Kind: core.ActionAccept}},
		{Action: core.Action{Kind: core.ActionAnswer}},
		{Label: "B", Action: core.Action{Kind: core.ActionAnswer}},
		{Label: "Revise", Action: core.Action{Kind: core.ActionRevise}},
	}
	var got []string
	for option, b := range Numbered(bs) {
		got = append(got, ButtonLabel(b)+":"+string(rune('0'+option)))
	}
	if want := "Accept:0 answer:1 B:2 Revise:2"; strings.Join(got, " ") != want {
		t.Errorf("numbered buttons %q, want %q", got, want)
	}
	for id, want := range map[string]bool{"abc123": true, "A-b_9": true, "": false, "a:b": false, "a b": false, strings.Repeat("a", 65): false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, !want, want)
		}
	}
}
