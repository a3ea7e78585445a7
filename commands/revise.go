package commands

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// maxStepNumber bounds a step number as typed; the core checks it against the plan.
const maxStepNumber = 1000

// parseRevise reads the argument of /plan revise. Text that starts with a list of step
// numbers and a colon ("2: …", "2,4: …", "step 2: …") is a comment on those steps: Steps
// holds them, Args the comment. Anything else is feedback for the whole plan, so "Note: …"
// stays feedback; a prefix that looks like a list but is not one ("2,,4:", "0:",
// "step x:") is a usage error, so a mistyped comment is never sent back as feedback.
func parseRevise(cmd Command) Result {
	spec := cmd.Spec
	first, _, _ := strings.Cut(cmd.Args, "\n")
	prefix, rest, ok := strings.Cut(first, ":")
	if !ok {
		return Result{Kind: IsCommand, Cmd: cmd}
	}
	list, worded := cutStepWord(strings.TrimFunc(prefix, isSpace))
	if !worded && !looksLikeList(list) {
		return Result{Kind: IsCommand, Cmd: cmd}
	}
	steps, reply := parseSteps(list)
	if reply != "" {
		return usageResult(cmd, fmt.Sprintf("`/plan revise` takes step numbers like 2 or 2,4 before the colon (%s): %s", reply, usage(spec)))
	}
	text := strings.TrimFunc(rest+cmd.Args[len(first):], isSpace)
	if text == "" {
		return usageResult(cmd, fmt.Sprintf("`/plan revise %s:` needs the comment after the colon: /plan revise %s: <comment>", list, list))
	}
	cmd.Steps, cmd.Args = steps, text
	return Result{Kind: IsCommand, Cmd: cmd}
}

// cutStepWord removes a leading "step" or "steps" word; worded reports whether there was one.
func cutStepWord(s string) (string, bool) {
	word, rest := cutWord(s)
	if w := strings.ToLower(word); (w == "step" || w == "steps") && rest != "" {
		return rest, true
	}
	return s, false
}

// looksLikeList: only digits, commas and blanks, or one word with a digit and a comma.
func looksLikeList(s string) bool {
	if s == "" {
		return false
	}
	onlyList := strings.IndexFunc(s, func(r rune) bool { return !isDigit(r) && r != ',' && !isSpace(r) }) < 0
	oneWord := strings.IndexFunc(s, isSpace) < 0 && strings.ContainsRune(s, ',') && strings.IndexFunc(s, unicode.IsDigit) >= 0
	return onlyList || oneWord
}

// parseSteps reads "2", "2,4" or "2, 4" into distinct step numbers in the order given.
func parseSteps(s string) ([]int, string) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimFunc(part, isSpace)
		switch {
		case part == "":
			return nil, fmt.Sprintf("%s has an empty entry", quote(s))
		case strings.TrimFunc(part, isDigit) != "":
			return nil, fmt.Sprintf("%s is not a step number", quote(part))
		}
		n, err := strconv.Atoi(part)
		switch {
		case err != nil || n > maxStepNumber:
			return nil, fmt.Sprintf("%s is too large", quote(part))
		case n < 1:
			return nil, "steps are numbered from 1"
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, ""
}
