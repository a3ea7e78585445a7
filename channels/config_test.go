package channels

import (
	"strings"
	"testing"
)

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
