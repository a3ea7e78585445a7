package commands

import (
	"slices"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"accept", "accept", 0},
		{"acept", "accept", 1},
		{"accpet", "accept", 1}, // adjacent swap costs one
		{"revice", "revise", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not unrestricted Damerau
		{"übel", "ubel", 1},
		{"日本語", "日本", 1},
	}
	for _, tc := range tests {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			if got := distance([]rune(tc.a), []rune(tc.b)); got != tc.want {
				t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := distance([]rune(tc.b), []rune(tc.a)); got != tc.want {
				t.Errorf("distance(%q, %q) = %d, want %d (symmetry)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word string
		want []string
	}{
		{"acept", []string{"accept"}},
		{"ACCPET", []string{"accept"}},
		{"acc", []string{"accept"}},
		{"a", []string{"accept", "answer", "auto"}},
		{"o", []string{"on", "off"}},
		{"of", []string{"off"}},
		{"ox", []string{"on"}},
		{"stats", []string{"status"}},
		{"nudg", []string{"nudge"}},
		{"nuge", []string{"nudge"}},
		{"shwo", []string{"show"}},
		{"", nil},
		{"xyzzy", nil},
		{"budget", nil},
		{"accepting", nil}, // three edits from accept: too far
		{strings.Repeat("a", 10000), nil},
	}
	for _, tc := range tests {
		t.Run(tc.word, func(t *testing.T) {
			if got := suggest(tc.word, names()); !slices.Equal(got, tc.want) {
				t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}

func TestOrList(t *testing.T) {
	tests := []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "/plan a"},
		{[]string{"a", "b"}, "/plan a or /plan b"},
		{[]string{"a", "b", "c"}, "/plan a, /plan b or /plan c"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := orList(tc.items, "/plan "); got != tc.want {
				t.Errorf("orList(%q) = %q, want %q", tc.items, got, tc.want)
			}
		})
	}
}
