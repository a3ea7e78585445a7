package core

import (
	"fmt"
	"slices"
	"strings"
)

// SecretScanner finds credentials in text: what the agent is about to write and what a
// command printed (core/secrets implements it with gitleaks' rule set). It is safe for
// concurrent use.
type SecretScanner interface {
	Scan(text string) []Secret
}

// Secret is one credential a SecretScanner found. Text is the secret itself, kept only to
// hide it (RedactSecrets); nothing shows or stores it.
type Secret struct {
	Rule    string // the rule that matched, e.g. "aws-access-token"
	Line    int    // 1-based line of text where it starts
	EndLine int    // 1-based line where it ends
	Text    string // the secret as it appears in text, or "" when only a decoded form matched
}

// String names the secret without showing it: "aws-access-token on line 3".
func (s Secret) String() string { return fmt.Sprintf("%s on line %d", s.Rule, s.Line) }

// Redacted is what stands in a text for a hidden secret.
func Redacted(rule string) string { return "[secret hidden: " + rule + "]" }

// RedactSecrets hides the secrets found in text: each occurrence of a secret's text is
// replaced by Redacted; a secret found only in a decoded form (its text does not appear)
// hides the whole lines it was found on.
func RedactSecrets(text string, found []Secret) string {
	var whole []Secret
	for _, s := range found {
		if s.Text != "" && strings.Contains(text, s.Text) {
			text = strings.ReplaceAll(text, s.Text, Redacted(s.Rule))
		} else {
			whole = append(whole, s)
		}
	}
	if len(whole) == 0 {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	for _, s := range whole {
		for i := max(s.Line, 1); i <= max(s.EndLine, s.Line) && i <= len(lines); i++ {
			nl := ""
			if strings.HasSuffix(lines[i-1], "\n") {
				nl = "\n"
			}
			lines[i-1] = Redacted(s.Rule) + nl
		}
	}
	return strings.Join(lines, "")
}

// SecretsList names found secrets for a notice, at most three, without showing them:
// "aws-access-token on line 3, github-pat on line 9".
func SecretsList(found []Secret) string {
	names := make([]string, 0, min(len(found), 3))
	for _, s := range found[:min(len(found), 3)] {
		names = append(names, s.String())
	}
	if n := len(found) - len(names); n > 0 {
		names = append(names, fmt.Sprintf("%d more", n))
	}
	return strings.Join(slices.Compact(names), ", ")
}

// SecretRules names the rules of found secrets, each once: "aws-access-token, github-pat".
func SecretRules(found []Secret) string {
	var rules []string
	for _, s := range found {
		if !slices.Contains(rules, s.Rule) {
			rules = append(rules, s.Rule)
		}
	}
	return strings.Join(rules, ", ")
}

// SecretWrite is the error of a write a toolbox refused because it would make a secret
// appear in a file (an edit that completes one with the text around it). It names the
// call and the secrets, never shows them.
type SecretWrite struct {
	What  string // "edit_file on .env"
	Found string // SecretsList of what it found
}

func (e *SecretWrite) Error() string {
	return e.What + " would write a secret (" + e.Found + "): the edit completes one with the text around it; nothing was written"
}
