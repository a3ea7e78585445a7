package conf

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestKeyErrors(t *testing.T) {
	other := errors.New("reading the manifest: boom")
	err := errors.Join(
		Invalid("poll_timeout", "is %s: it must be between 1s and 5m", "10m0s"),
		nil,
		errors.Join(Unset("token"), fmt.Errorf("checking: %w", Invalid("api_url", "is not an http:// or https:// URL"))),
		other,
	)
	keys, rest := KeyErrors(err)
	var got []string
	for _, k := range keys {
		got = append(got, k.Error())
	}
	want := []string{
		"poll_timeout is 10m0s: it must be between 1s and 5m",
		"token is empty: set token",
		"api_url is not an http:// or https:// URL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("KeyErrors keys =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(rest) != 1 || rest[0] != other {
		t.Errorf("KeyErrors rest = %v, want [%v]", rest, other)
	}
	if !keys[1].Unset || keys[0].Unset {
		t.Errorf("Unset flags = %v, %v; want false, true", keys[0].Unset, keys[1].Unset)
	}
	if k, r := KeyErrors(nil); k != nil || r != nil {
		t.Errorf("KeyErrors(nil) = %v, %v", k, r)
	}
}

func TestBadValueAndOneOf(t *testing.T) {
	if err := OneOf("level", "info", "debug", "info"); err != nil {
		t.Errorf("OneOf(allowed value) = %v", err)
	}
	err := OneOf("level", "loud", "debug", "info", "warn")
	if got, want := err.Error(), `level is "loud": expected debug, info or warn`; got != want {
		t.Errorf("OneOf = %q, want %q", got, want)
	}
	keys, _ := KeyErrors(err)
	if len(keys) != 1 || keys[0].Value == nil || *keys[0].Value != "loud" || keys[0].Msg != "expected debug, info or warn" {
		t.Errorf("OneOf's KeyError = %+v: the loader needs the value apart from the message", keys)
	}
	if got, want := OneOf("format", "x", "text").Error(), `format is "x": expected text`; got != want {
		t.Errorf("OneOf with one allowed value = %q, want %q", got, want)
	}
}
