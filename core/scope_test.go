package core

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
)

func TestScopeMatch(t *testing.T) {
	cases := []struct {
		pattern string
		path    string
		want    bool
	}{
		// No slash: a name at any depth ("*.env" covers "app/.env").
		{"*.env", ".env", true},
		{"*.env", "app/.env", true},
		{"*.env", "a/b/prod.env", true},
		{"*.env", "app/.env.example", false},
		{"*.env", "env", false},
		{"README.md", "README.md", true},
		{"README.md", "docs/README.md", true},
		{"README.md", "README.mdx", false},
		{"secrets", "secrets/prod/db.txt", true},
		{"secrets", "app/secrets/key", true},
		{"secrets", "secretsx/key", false},
		{"id_?sa", "home/id_rsa", true},
		{"[.]env", ".env", true},
		// With a slash: anchored at the workspace root.
		{"cfg/*.yaml", "cfg/a.yaml", true},
		{"cfg/*.yaml", "cfg/prod.yaml/inner.txt", true}, // a matched directory covers its contents
		{"cfg/*.yaml", "cfg/sub/a.yaml", false},
		{"cfg/*.yaml", "x/cfg/a.yaml", false},
		{"cfg/*.yaml", "cfg/a.yml", false},
		{"docs/guide.md", "docs/guide.md", true},
		{"docs/guide.md", "x/docs/guide.md", false},
		// A pattern that matches a directory covers everything under it.
		{"secrets/*", "secrets/db.txt", true},
		{"secrets/*", "secrets/prod/db.txt", true},
		{"secrets/*", "secrets", false},
		{"secrets/*", "app/secrets/db.txt", false},
		{"docs/**", "docs/a/b/c.md", true},
		{"docs/**", "docsx/a.md", false},
		{"keys/**", "keys/prod/id", true},
		// ** crosses directories.
		{"**/*.pem", "id.pem", true},
		{"**/*.pem", "a/b/id.pem", true},
		{"**/*.pem", "a/b/id.pem.txt", false},
		{"**/*.pem", "certs.pem/readme", true},
		{"src/**/test_*.go", "src/test_a.go", true},
		{"src/**/test_*.go", "src/a/b/test_a.go", true},
		{"src/**/test_*.go", "lib/a/test_a.go", false},
		{"{docs,notes}/*.md", "notes/a.md", true},
		// Only "**" covers the whole workspace.
		{"**", ".", true},
		{"**", "a/b/c", true},
		{"./**", ".", true},
		{"*", ".", false},
		{"?", ".", false},
		{"[.]", ".", false},
		{"./", ".", false},
		{".", ".", false},
		{"*", "a/b", true}, // a name at any depth: covers everything, but is not "**"
		// Leftovers of older plans: a leading "./" and a trailing "/" are ignored.
		{"./docs/*.md", "docs/a.md", true},
		{"docs/", "docs/a.md", true},
		{"docs/", "x/docs/a.md", true},
		// A zero-width space makes a different pattern (the judge refuses it).
		{"keys/**\u200b", "keys/a", false},
		// Malformed patterns match nothing.
		{"[", "[", false},
		{"", "a", false},
	}
	for _, c := range cases {
		if got := scopeMatch(c.pattern, c.path); got != c.want {
			t.Errorf("scopeMatch(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

func TestCheckScope(t *testing.T) {
	cases := []struct {
		name      string
		allowed   []string
		forbidden []string
		path      string
		ok        bool
		why       string // a part of the refusal
	}{
		{"no scope writes nothing", nil, nil, "README.md", false, "this plan names no files it may change"},
		{"no scope runs nothing", nil, nil, ".", false, "this plan names no files it may change"},
		{"only forbidden paths write nothing", nil, []string{"secrets"}, "README.md", false, "names no files"},
		{"allowed file", []string{"README.md"}, nil, "README.md", true, ""},
		{"outside the scope", []string{"README.md"}, nil, "main.go", false, "outside the plan's scope (allowed: README.md)"},
		{"forbidden beats allowed", []string{"**"}, []string{"*.env"}, "app/.env", false, "forbidden by the plan's scope (*.env)"},
		{"forbidden nested", []string{"**"}, []string{"secrets/*"}, "secrets/prod/db.txt", false, "forbidden"},
		{"forbidden pem at the root", []string{"**"}, []string{"**/*.pem"}, "id.pem", false, "forbidden"},
		{"forbidden pem nested", []string{"src/**"}, []string{"**/*.pem"}, "src/a/id.pem", false, "forbidden"},
		{"forbidden yaml", []string{"**"}, []string{"cfg/*.yaml"}, "cfg/prod.yaml", false, "forbidden"},
		{"allowed next to forbidden", []string{"**"}, []string{"secrets/*"}, "src/main.go", true, ""},
		{"command with the whole workspace", []string{"**"}, nil, ".", true, ""},
		{"command with the whole workspace among others", []string{"README.md", "**"}, nil, ".", true, ""},
		{"command with *", []string{"*"}, nil, ".", false, "does not cover the whole workspace"},
		{"command with ?", []string{"?"}, nil, ".", false, "does not cover the whole workspace"},
		{"command with [.]", []string{"[.]"}, nil, ".", false, "does not cover the whole workspace"},
		{"command with ./", []string{"./"}, nil, ".", false, "does not cover the whole workspace"},
		{"command with .", []string{"."}, nil, ".", false, "does not cover the whole workspace"},
		{"command with docs/**", []string{"docs/**"}, nil, ".", false, `only a plan that allows "**" may run commands`},
		{"command with forbidden paths", []string{"**"}, []string{"secrets"}, ".", false, "the plan forbids secrets"},
		{"a ./ prefix on the path", []string{"README.md"}, nil, "./README.md", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why, ok := inScope(plan.Scope{AllowedPaths: c.allowed, ForbiddenPaths: c.forbidden}, c.path)
			if ok != c.ok {
				t.Fatalf("inScope(%q) = %v (%s), want %v", c.path, ok, why, c.ok)
			}
			if !strings.Contains(why, c.why) || (c.ok && why != "") {
				t.Errorf("reason %q, want it to contain %q", why, c.why)
			}
		})
	}
}

func TestScopeSummaryAndChange(t *testing.T) {
	readme := plan.Scope{AllowedPaths: []string{"README.md"}}
	all := plan.Scope{AllowedPaths: []string{"**"}}
	both := plan.Scope{AllowedPaths: []string{"README.md", "CHANGELOG.md"}}
	guarded := plan.Scope{AllowedPaths: []string{"**"}, ForbiddenPaths: []string{"secrets/*"}}
	for _, c := range []struct {
		s    plan.Scope
		want string
	}{
		{plan.Scope{}, "no files"},
		{plan.Scope{ForbiddenPaths: []string{"*.env"}}, "no files"},
		{readme, "README.md"},
		{both, "README.md, CHANGELOG.md"},
		{all, "the whole workspace"},
		{guarded, "the whole workspace except secrets/*"},
	} {
		if got := plan.ScopeSummary(c.s); got != c.want {
			t.Errorf("ScopeSummary(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
	for _, c := range []struct {
		old, new plan.Scope
		want     string
	}{
		{readme, readme, ""},
		{both, plan.Scope{AllowedPaths: []string{"CHANGELOG.md", "./README.md"}}, ""},
		{readme, all, "scope widened: README.md → the whole workspace"},
		{plan.Scope{}, readme, "scope widened: no files → README.md"},
		{readme, both, "scope widened: README.md → README.md, CHANGELOG.md"},
		{guarded, all, "scope widened: the whole workspace except secrets/* → the whole workspace"},
		{all, readme, "scope narrowed: the whole workspace → README.md"},
		{all, guarded, "scope narrowed: the whole workspace → the whole workspace except secrets/*"},
		{readme, plan.Scope{AllowedPaths: []string{"main.go"}}, "scope changed: README.md → main.go"},
	} {
		if got := plan.ScopeChange(c.old, c.new); got != c.want {
			t.Errorf("ScopeChange(%+v, %+v) = %q, want %q", c.old, c.new, got, c.want)
		}
	}
}
