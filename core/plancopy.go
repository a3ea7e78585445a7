package core

// The workspace copy's names and rules, which the engine writes and the workspace tools
// protect.

import (
	"errors"
	"path"
	"strings"
)

// Names of the workspace copy, at the workspace root, and a bound on what is read back of
// them (to recognise plangate's own PLAN.json, and for run_command's put-back). The bound
// is above anything the judge lets a plan render to: 50 steps of 50 criteria of 2000
// characters, listed twice in PLAN.json when verified, is about 42 MB at 4 bytes a character.
const (
	PlanCopyMarkdown = "PLAN.md"
	PlanCopyJSON     = "PLAN.json"
	MaxPlanCopyBytes = 64 << 20
)

// PlanCopyNames are the workspace copy's file names.
var PlanCopyNames = []string{PlanCopyMarkdown, PlanCopyJSON}

// IsPlanCopy reports whether the cleaned, slash-separated, workspace-relative rel names
// one of the copy's files. Names compare without case: on a case-insensitive file system
// plan.md is PLAN.md.
func IsPlanCopy(rel string) (string, bool) {
	rel = path.Clean(strings.TrimPrefix(rel, "./"))
	for _, n := range PlanCopyNames {
		if strings.EqualFold(rel, n) {
			return n, true
		}
	}
	return "", false
}

// PlanCopyContract is what the tools say of the copy's file name.
func PlanCopyContract(name string) string {
	return name + " is the approved plan, the person's contract; it cannot be changed"
}

// PlanCopyRefusal is the tool error for an attempt to change the copy's file name.
func PlanCopyRefusal(name string) error {
	return errors.New(PlanCopyContract(name) + ". Read it with read_file; if the plan must change, say so in the chat and a person can send it back with /plan revise")
}
