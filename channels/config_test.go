package channels

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

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"": true, "http://127.0.0.1:9/api/": true, "https://h": true,
		"ftp://x": false, "/relative": false, "localhost:11434/v1": false, "https://user:SECRET@": false,
	} {
		err := CheckURL("api_url", raw)
		if (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", raw, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), raw) {
			t.Errorf("CheckURL(%q) echoes the value: %v", raw, err)
		}
	}
}

func TestCheckLongReplyAsFile(t *testing.T) {
	for n, want := range map[int]string{0: "", 12000: "", -1: "long_reply_as_file is -1: use 0 (never) or a character count"} {
		got := ""
		if err := CheckLongReplyAsFile("long_reply_as_file", n); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckLongReplyAsFile(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSafeURLAndAPINote(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:SECRET@h.example/bot?token=SECRET#x": "https://h.example/bot",
		"http://127.0.0.1:9/api/":                          "http://127.0.0.1:9/api/",
		"://bad":                                           "(invalid URL)",
	} {
		if got := SafeURL(raw); got != want {
			t.Errorf("SafeURL(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := APINote(""); got != "" {
		t.Errorf(`APINote("") = %q, want ""`, got)
	}
	if got := APINote("http://h/x?k=SECRET"); got != ", api http://h/x" {
		t.Errorf("APINote = %q", got)
	}
	if SetOrNot("") != "not set" || SetOrNot("SECRET") != "set" {
		t.Errorf("SetOrNot = %q, %q", SetOrNot(""), SetOrNot("SECRET"))
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
