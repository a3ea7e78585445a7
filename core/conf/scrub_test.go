package conf

import (
	"cmp"
	"slices"
	"strings"
	"testing"
)

// ScrubSecrets returns s with every occurrence of each secret replaced by "<token>", so
// that error text and logs never carry a credential. Empty secrets are skipped (replacing
// "" would insert the marker everywhere). Longer secrets are replaced first, so that a
// secret containing a shorter one (a token and its escaped form, say) is removed whole
// rather than leaving a fragment behind.
func ScrubSecrets(s string, secrets ...string) string {
	if len(secrets) == 0 {
		return s
	}
	sorted := slices.Clone(secrets)
	slices.SortStableFunc(sorted, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, sec := range sorted {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, "<token>")
	}
	return s
}

func TestScrubSecrets(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{name: "no secrets", in: "GET /bot123:abc/getMe", want: "GET /bot123:abc/getMe"},
		{name: "empty secret skipped", in: "plain text", secrets: []string{""}, want: "plain text"},
		{name: "raw token", in: "GET /bot123:abc/getMe: 401", secrets: []string{"123:abc"}, want: "GET /bot<token>/getMe: 401"},
		{name: "every occurrence", in: "x tok y tok", secrets: []string{"tok"}, want: "x <token> y <token>"},
		{name: "two tokens", in: "xoxb-1 and xapp-2", secrets: []string{"xoxb-1", "", "xapp-2"}, want: "<token> and <token>"},
		{
			// Were "ab" replaced first, "ab/cd" would no longer match and "/cd" would
			// be left in the text; the longer secret goes first.
			name: "longer first", in: "id=ab/cd", secrets: []string{"ab", "ab/cd"}, want: "id=<token>",
		},
		{name: "escaped form", in: "POST /a%2Fb/x", secrets: []string{"a/b", "a%2Fb"}, want: "POST /<token>/x"},
		{name: "absent secret", in: "nothing here", secrets: []string{"SECRET"}, want: "nothing here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScrubSecrets(tt.in, tt.secrets...); got != tt.want {
				t.Fatalf("ScrubSecrets(%q, %q) = %q, want %q", tt.in, tt.secrets, got, tt.want)
			}
		})
	}
}

func TestScrubSecretsKeepsCallerSlice(t *testing.T) {
	secrets := []string{"a", "abc", "ab"}
	_ = ScrubSecrets("abc", secrets...)
	if secrets[0] != "a" || secrets[1] != "abc" || secrets[2] != "ab" {
		t.Fatalf("caller's slice reordered: %q", secrets)
	}
}
