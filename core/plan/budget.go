package plan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// BudgetWords is the scope's budget in words, "at most 3 files, 100 lines" ("" for none).
func (s Scope) BudgetWords() string {
	var parts []string
	if s.MaxFilesChanged > 0 {
		parts = append(parts, plural(s.MaxFilesChanged, "file", "files"))
	}
	if s.MaxLinesChanged > 0 {
		parts = append(parts, plural(s.MaxLinesChanged, "line", "lines"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "at most " + strings.Join(parts, ", ")
}

// budgetLine is the plan file's line for the budget in "## Scope", read back by
// parseBudgetLine.
func budgetLine(s Scope) string {
	if w := s.BudgetWords(); w != "" {
		return "May change " + w + "."
	}
	return ""
}

var budgetRe = regexp.MustCompile(`^(?i)may change at most (\d+) (files?|lines?)(?:, (\d+) (lines?))?\.?$`)

// parseBudgetLine reads a budget line back into sc; false when line is not one.
func parseBudgetLine(line string, sc *Scope) (bool, error) {
	m := budgetRe.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return false, nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return true, fmt.Errorf("the budget %s is too large", m[1])
	}
	if strings.HasPrefix(strings.ToLower(m[2]), "file") {
		sc.MaxFilesChanged = n
		if m[3] != "" {
			if sc.MaxLinesChanged, err = strconv.Atoi(m[3]); err != nil {
				return true, fmt.Errorf("the budget %s is too large", m[3])
			}
		}
		return true, nil
	}
	if m[3] != "" {
		return true, fmt.Errorf("write the budget as `May change at most 3 files, 100 lines.`")
	}
	sc.MaxLinesChanged = n
	return true, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// ChangedWords is what an execution changed against the scope's budget: "2 of 3 files,
// 40 of 100 lines changed" (a count without a limit is given alone, "2 files changed").
func ChangedWords(s Scope, files, lines int) string {
	fw := plural(files, "file", "files")
	if s.MaxFilesChanged > 0 {
		fw = strconv.Itoa(files) + " of " + plural(s.MaxFilesChanged, "file", "files")
	}
	if s.MaxLinesChanged <= 0 {
		return fw + " changed"
	}
	return fw + ", " + strconv.Itoa(lines) + " of " + plural(s.MaxLinesChanged, "line", "lines") + " changed"
}
