package machine

import (
	"github.com/plangate/plangate/core/plan"
)

// stopWords are the stop conditions in words, for /plan status.
var stopWords = map[plan.StopKind]string{
	plan.StopMaxIterations:      "the turn ran out of model calls",
	plan.StopRepeatedFailure:    "the same failure repeated",
	plan.StopMaxFilesChanged:    "the files-changed budget was exceeded",
	plan.StopMaxLinesChanged:    "the lines-changed budget was exceeded",
	plan.StopForbiddenPath:      "a path outside the scope was touched",
	plan.StopForbiddenTool:      "a tool outside the scope was called",
	plan.StopWorkspaceDrifted:   "the workspace changed outside the agent",
	plan.StopVerificationFailed: "verification failed",
	plan.StopDestructiveCommand: "a destructive command was requested",
	plan.StopSecretDetected:     "a secret was detected",
	plan.StopHumanDecision:      "the agent needs a person's decision",
}

// StopWords is a stop's kind in words (the kind itself for one without words).
func StopWords(k plan.StopKind) string {
	if w, ok := stopWords[k]; ok {
		return w
	}
	return string(k)
}

// stopNext is what a person can do after a stop of each kind, beyond the default: a
// budget or scope stop refuses the version's mutating calls from then on, so going on
// with changes needs a new version; the others go on with a message.
func stopNext(k plan.StopKind) string {
	const revise = "/plan revise <feedback> for a new version"
	const off = "/plan off to end it"
	switch k {
	case plan.StopMaxFilesChanged, plan.StopMaxLinesChanged:
		return "/plan revise <feedback> for a new version with a larger budget · " + off
	case plan.StopForbiddenPath, plan.StopForbiddenTool:
		return "/plan revise <feedback> for a new version with a wider scope · send a message to go on within the scope · " + off
	case plan.StopWorkspaceDrifted:
		return "check the change, then send a message to go on · " + revise + " · " + off
	case plan.StopSecretDetected:
		return "remove the secret, then send a message to go on · " + revise + " · " + off
	case plan.StopHumanDecision:
		return "answer the agent with a message · " + revise + " · " + off
	}
	return "send a message to let the agent go on · " + revise + " · " + off
}

// StopLines are the /plan status lines of a stopped execution: why it stopped and when,
// the notice the chat got, and what a person can do next.
func StopLines(st plan.Stop) []string {
	return []string{
		"stopped: " + StopWords(st.Kind) + " (" + string(st.Kind) + ") at " + st.At.UTC().Format("2006-01-02 15:04 MST"),
		"notice: " + OneLine(st.Message),
		"next: " + stopNext(st.Kind),
	}
}
