package plan

import (
	"strings"
	"testing"
	"time"
)

// Every stop condition has words and a next action; a budget stop points at a new
// version, since the version's mutating calls are refused from then on.
func TestStopLines(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 5, 0, 0, time.FixedZone("CET", 3600))
	for _, k := range []StopKind{StopMaxIterations, StopRepeatedFailure, StopMaxFilesChanged, StopMaxLinesChanged,
		StopForbiddenPath, StopForbiddenTool, StopWorkspaceDrifted, StopVerificationFailed,
		StopDestructiveCommand, StopSecretDetected, StopHumanDecision} {
		if StopWords(k) == string(k) {
			t.Errorf("%s has no words", k)
		}
		ls := Stop{Kind: k, Message: "Stopped:\nsomething", At: at}.Lines()
		if len(ls) != 3 || !strings.Contains(ls[0], "("+string(k)+") at 2026-11-30 08:05 UTC") || ls[1] != "notice: Stopped: something" ||
			!strings.HasPrefix(ls[2], "next: ") || !strings.Contains(ls[2], "/plan off to end it") {
			t.Errorf("%s: %q", k, ls)
		}
	}
	if got := (Stop{Kind: StopMaxLinesChanged}).Lines()[2]; !strings.Contains(got, "new version with a larger budget") || strings.Contains(got, "send a message") {
		t.Errorf("budget stop next: %q", got)
	}
	if StopWords("made_up") != "made_up" {
		t.Error("an unknown kind is not shown as itself")
	}
}
