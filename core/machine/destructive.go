package machine

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Destructive commands (tools.run_command.destructive): argv patterns a run_command must
// not match to run without a person. The engine's guard stops the turn before such a
// command runs, whatever the plan's scope.

// OutsideWord is the pattern word that matches an argument naming a path outside the
// workspace: absolute, under ~, or leading out with "..".
const OutsideWord = "<outside>"

// DefaultDestructive is the list when the config names none: history rewritten or thrown
// away, and trees removed outside the workspace.
var DefaultDestructive = []string{
	"git push --force", "git push -f", "git push --force-with-lease", "git push --mirror",
	"git push --delete", "git push +*", "git reset --hard", "git clean -f", "git branch -D",
	"rm -r " + OutsideWord, "rm -R " + OutsideWord, "rm --recursive " + OutsideWord,
}

// CommandPattern is one destructive command: a program and the words its arguments must
// all contain, in any order (so "git push --force" matches "git -C app push origin main
// --force").
type CommandPattern struct {
	Text    string   // as configured
	Program string   // argv[0], or its base name
	Words   []string // each must match some argument
}

// ParseCommandPattern reads "git push --force": words separated by spaces, the first the
// program. A later word matches an argument equal to it; "--flag" also matches
// "--flag=value"; a one-letter "-f" also matches a cluster of short flags such as "-fd";
// a word with "*" is a wildcard, "*" standing for any characters ("+*" matches
// "+refs/heads/main"); OutsideWord matches a path outside
// the workspace.
func ParseCommandPattern(s string) (CommandPattern, error) {
	words := strings.Fields(s)
	switch {
	case len(words) == 0:
		return CommandPattern{}, errors.New(`is empty: write a program and its arguments, such as "git push --force"`)
	case strings.HasPrefix(words[0], "<") || strings.Contains(words[0], "*"):
		return CommandPattern{}, fmt.Errorf("starts with %q: the first word is the program, such as git or rm", words[0])
	}
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "<") && w != OutsideWord {
			return CommandPattern{}, fmt.Errorf("has %q: the only placeholder is %s (a path outside the workspace)", w, OutsideWord)
		}
	}
	return CommandPattern{Text: strings.Join(words, " "), Program: words[0], Words: words[1:]}, nil
}

// Matches reports whether argv is the pattern's command.
func (p CommandPattern) Matches(argv []string) bool {
	if len(argv) == 0 || (argv[0] != p.Program && path.Base(argv[0]) != p.Program) {
		return false
	}
	args := argv[1:]
	for _, w := range p.Words {
		if !slices.ContainsFunc(args, func(a string) bool { return wordMatches(w, a) }) {
			return false
		}
	}
	return true
}

// wordMatches reports whether one argument matches one pattern word.
func wordMatches(w, a string) bool {
	switch {
	case w == OutsideWord:
		return !strings.HasPrefix(a, "-") && outside(a)
	case w == a:
		return true
	case strings.HasPrefix(w, "--"):
		return strings.HasPrefix(a, w+"=")
	case len(w) == 2 && w[0] == '-' && w[1] != '-':
		// A cluster of short flags: "-fd" holds "-f" (not "--fd", not "-f=x").
		return len(a) > 2 && a[0] == '-' && a[1] != '-' && !strings.Contains(a, "=") && strings.ContainsRune(a[1:], rune(w[1]))
	case strings.Contains(w, "*"):
		return wildcard(w, a)
	}
	return false
}

// wildcard matches a against w, where each "*" stands for any run of characters ("/"
// included: arguments are not paths).
func wildcard(w, a string) bool {
	parts := strings.Split(w, "*")
	if !strings.HasPrefix(a, parts[0]) {
		return false
	}
	a = a[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(a, p)
		if i < 0 {
			return false
		}
		a = a[i+len(p):]
	}
	return len(a) >= len(last) && strings.HasSuffix(a, last)
}

// outside reports whether a path argument names something outside the workspace the
// command runs in.
func outside(a string) bool {
	if strings.HasPrefix(a, "/") || strings.HasPrefix(a, "~") {
		return true
	}
	c := path.Clean(a)
	return c == ".." || strings.HasPrefix(c, "../")
}

// MatchDestructive returns the first pattern argv matches.
func MatchDestructive(ps []CommandPattern, argv []string) (CommandPattern, bool) {
	for _, p := range ps {
		if p.Matches(argv) {
			return p, true
		}
	}
	return CommandPattern{}, false
}

// ParseCommandPatterns parses a configured list; the error names the first bad entry's
// index.
func ParseCommandPatterns(list []string) ([]CommandPattern, error) {
	out := make([]CommandPattern, 0, len(list))
	for i, s := range list {
		p, err := ParseCommandPattern(s)
		if err != nil {
			return nil, fmt.Errorf("[%d] %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}
