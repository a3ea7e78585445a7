package core

import "testing"

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
