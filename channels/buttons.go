package channels

import (
	"iter"
	"strings"

	"github.com/plangate/plangate/core"
)

// Numbered yields the buttons in order with their option numbers: answer buttons are
// numbered 1, 2, … (the number their platform data carries, which the engine maps back
// to the option); any other button gets the count of answers before it.
func Numbered(bs []core.Button) iter.Seq2[int, core.Button] {
	return func(yield func(int, core.Button) bool) {
		option := 0
		for _, b := range bs {
			if b.Action.Kind == core.ActionAnswer {
				option++
			}
			if !yield(option, b) {
				return
			}
		}
	}
}

// ButtonLabel is the text a button shows: its label, or its action's name without one.
func ButtonLabel(b core.Button) string {
	if label := strings.TrimSpace(b.Label); label != "" {
		return label
	}
	return string(b.Action.Kind)
}

// ValidID reports whether s may travel in a button's platform data and in a state key:
// it accepts what the engine makes (lower-case base32) and a little more, but nothing that
// could smuggle in a separator.
func ValidID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
