package core

import (
	"strings"
	"testing"
)

func TestInScope(t *testing.T) {
	for _, tc := range []struct {
		scope Scope
		path  string
		ok    bool
	}{
		{Scope{}, "anything/at/all.go", true},
		{Scope{AllowedPaths: []string{"README.md"}}, "README.md", true},
		{Scope{AllowedPaths: []string{"README.md"}}, "./README.md", true},
		{Scope{AllowedPaths: []string{"README.md"}}, "docs/a.md", false},
		{Scope{AllowedPaths: []string{"docs/**"}}, "docs/a/b.md", true},
		{Scope{AllowedPaths: []string{"docs"}}, "docs/a.md", true},
		{Scope{AllowedPaths: []string{"docs/*.md"}}, "docs/a.md", true},
		{Scope{AllowedPaths: []string{"docs/*.md"}}, "docs/x/a.md", false},
		{Scope{ForbiddenPaths: []string{"secrets/**"}}, "secrets/key", false},
		{Scope{ForbiddenPaths: []string{"secrets/**"}}, "src/main.go", true},
		// "." stands for a command that may touch anything.
		{Scope{}, ".", true},
		{Scope{AllowedPaths: []string{"README.md"}}, ".", false},
		{Scope{AllowedPaths: []string{"**"}}, ".", true},
		{Scope{AllowedPaths: []string{"**"}}, "deep/down/file.go", true},
		{Scope{AllowedPaths: []string{"."}}, "deep/down/file.go", true},
		{Scope{ForbiddenPaths: []string{"secrets/**"}}, ".", false},
	} {
		if _, ok := inScope(tc.scope, tc.path); ok != tc.ok {
			t.Errorf("inScope(%+v, %q) = %v, want %v", tc.scope, tc.path, ok, tc.ok)
		}
	}
}

func TestTrimHistoryAndTruncate(t *testing.T) {
	h := []ChatMessage{{Content: "aaaaaaaaaa"}, {Content: "bbbbbbbbbb"}, {Content: "cccccccccc"}}
	if got := trimHistory(h, 25); len(got) != 2 || got[0].Content != "bbbbbbbbbb" {
		t.Errorf("trimHistory(25) = %v", got)
	}
	if got := trimHistory(h, 5); len(got) != 1 || got[0].Content != "cccccccccc" {
		t.Errorf("trimHistory keeps the newest entry: %v", got)
	}
	if got := trimHistory(h, 1000); len(got) != 3 {
		t.Errorf("trimHistory(1000) dropped entries: %v", got)
	}
	long := "héllo wörld, " + string(make([]byte, 100))
	got := truncateResult(long, 2)
	if got[:1] != "h" || !strings.Contains(got, "[truncated: showing 1 of") {
		t.Errorf("truncateResult = %q", got)
	}
	if truncateResult("short", 10) != "short" {
		t.Error("short result changed")
	}
}
