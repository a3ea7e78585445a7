package main

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/plangate/plangate/core/conf"
)

// TestKeyProblems covers how a section's Validate result is placed: under the section's
// path, naming the variable a missing secret comes from, hiding values from the
// environment, and keeping an error that names no key at the section.
func TestKeyProblems(t *testing.T) {
	c := &Config{origins: map[string][]string{
		"channels.x.token": {"X_TOKEN"},
		"channels.x.mode":  {"X_MODE"},
	}}
	err := errors.Join(
		conf.Unset("token"),
		conf.Unset("other"),
		conf.OneOf("mode", "SECRET", "a", "b"),
		conf.OneOf("kind", "c", "a", "b"),
		conf.Invalid("limit", "is %d: it must be at least 1", 0),
		fmt.Errorf("reading the manifest: %w", errors.New("boom")),
		errors.New("channels.x.users.a: the token is short"),
		errors.New("channels.xy: not this section's key"),
	)
	got := c.keyProblems("channels.x", err)
	want := []problem{
		{"channels.x.token", "channels.x.token is empty: set X_TOKEN"},
		{"channels.x.other", "channels.x.other is empty: set channels.x.other"},
		{"channels.x.mode", "channels.x.mode is the value of X_MODE: expected a or b"},
		{"channels.x.kind", `channels.x.kind is "c": expected a or b`},
		{"channels.x.limit", "channels.x.limit is 0: it must be at least 1"},
		{"channels.x", "channels.x: reading the manifest: boom"},
		{"channels.x.users.a", "channels.x.users.a: the token is short"},
		{"channels.x", "channels.x: channels.xy: not this section's key"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keyProblems =\n%q\nwant\n%q", got, want)
	}
	if got := c.keyProblems("channels.x", nil); len(got) != 0 {
		t.Errorf("keyProblems(nil) = %q", got)
	}
}

// TestEverySectionValidates makes sure no section of the file is skipped by validate: each
// is a validator itself or holds only validators (as channels does).
func TestEverySectionValidates(t *testing.T) {
	var check func(typ reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for f := range typ.Fields() {
			name := yamlName(f)
			switch {
			case name == "" || f.Type.Implements(reflect.TypeFor[conf.Validator]()) ||
				reflect.PointerTo(f.Type).Implements(reflect.TypeFor[conf.Validator]()):
			case f.Type.Kind() == reflect.Struct:
				check(f.Type, joinKey(path, name))
			default:
				t.Errorf("%s is not checked: it is not in a section with a Validate method", joinKey(path, name))
			}
		}
	}
	check(reflect.TypeFor[Config](), "")
}
