package channels

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A reply plainParagraph lets through renders exactly as the parser renders it, for every
// flavor that takes the shortcut; the generator favours the pieces that mean something
// at the start of a line or around punctuation, and the near misses (a URL, "www.", a
// list marker, markup characters) must be turned away.
func TestPlainParagraphRendersAsParsed(t *testing.T) {
	pieces := []string{"a", "Re", "z", "0", "12", " ", "  ", ",", ".", "...", "?", "!", "'", `"`, ";", ":", "(", ")", "-", "--",
		"1.", "2)", "www.", "WWW.", "ok", "http", "://", "x.org", "@", "*", "_", "~", "`", "#", "<", ">", "&", "|", "[", "]",
		"\n", "\t", "+", "=", "\\", "é"}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for range 100000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		md := b.String()
		if !plainParagraph(md) {
			continue
		}
		fast++
		for _, f := range []flavor{flavorTelegram, flavorPlain, flavorSlack} {
			if got, want := render(md, f), renderParsed(md, f); got != want {
				t.Fatalf("%s of %q = %q, the parser's %q", f, md, got, want)
			}
		}
	}
	t.Logf("%d of the generated replies took the shortcut", fast)
	if fast < 1000 {
		t.Fatalf("only %d of the generated replies took the shortcut", fast)
	}
	for _, md := range []string{"", " re: hi", "re: hi ", "1. one", "- item", "see www.example.com", "see http://x.org",
		"a@b.co", "a *b*", "x\ny", "a & b", "très bien", "# title", "> quote"} {
		if plainParagraph(md) {
			t.Errorf("plainParagraph(%q) = true", md)
		}
	}
	if !plainParagraph("re: message 12, in chat 3 (ok) - done.") {
		t.Error("a plain sentence does not take the shortcut")
	}
}
