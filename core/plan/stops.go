package plan

import "strings"

// stopWords are the stop conditions in words, for /plan status.
var stopWords = map[StopKind]string{
	StopMaxIterations:      "the turn ran out of model calls",
	StopRepeatedFailure:    "the same failure repeated",
	StopMaxFilesChanged:    "the files-changed budget was exceeded",
	StopMaxLinesChanged:    "the lines-changed budget was exceeded",
	StopForbiddenPath:      "a path outside the scope was touched",
	StopForbiddenTool:      "a tool outside the scope was called",
	StopWorkspaceDrifted:   "the workspace changed outside the agent",
	StopVerificationFailed: "verification failed",
	StopDestructiveCommand: "a destructive command was requested",
	StopSecretDetected:     "a secret was detected",
	StopHumanDecision:      "the agent needs a person's decision",
	StopTokenBudget:        "the plan's token budget was spent",
	StopDailyTokens:        "the conversation's daily token budget was spent",
}

// StopWords is a stop's kind in words (the kind itself for one without words).
func StopWords(k StopKind) string {
	if w, ok := stopWords[k]; ok {
		return w
	}
	return string(k)
}

// stopNext is what a person can do after a stop of each kind, beyond the default: a
// budget or scope stop refuses the version's mutating calls from then on, so going on
// with changes needs a new version; the others go on with a message.
func stopNext(k StopKind) string {
	const revise = "/plan revise <feedback> for a new version"
	const off = "/plan off to end it"
	switch k {
	case StopMaxFilesChanged, StopMaxLinesChanged:
		return "/plan revise <feedback> for a new version with a larger budget · " + off
	case StopForbiddenPath, StopForbiddenTool:
		return "/plan revise <feedback> for a new version with a wider scope · send a message to go on within the scope · " + off
	case StopWorkspaceDrifted:
		return "check the change, then send a message to go on · " + revise + " · " + off
	case StopSecretDetected:
		return "remove the secret, then send a message to go on · " + revise + " · " + off
	case StopTokenBudget:
		return "/plan revise <feedback> for a new version (its tokens count anew) · an operator raises plan_mode.max_tokens_per_plan · " + off
	case StopDailyTokens:
		return "send a message after midnight UTC to go on · an operator raises agent.max_tokens_per_session_day · " + off
	case StopHumanDecision:
		return "answer the agent with a message · " + revise + " · " + off
	}
	return "send a message to let the agent go on · " + revise + " · " + off
}

// Lines are the lines a person reads of a stopped execution (/plan status and the plan
// file): why it stopped and when, the notice the chat got, and what a person can do next.
func (s Stop) Lines() []string {
	notice := strings.Join(strings.Fields(s.Message), " ")
	if r := []rune(notice); len(r) > 300 {
		notice = string(r[:300]) + "…"
	}
	return []string{
		"stopped: " + StopWords(s.Kind) + " (" + string(s.Kind) + ") at " + s.At.UTC().Format("2006-01-02 15:04 MST"),
		"notice: " + notice,
		"next: " + stopNext(s.Kind),
	}
}
