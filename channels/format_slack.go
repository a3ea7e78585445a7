package channels

import (
	"bytes"
	"strings"
)

// SlackMrkdwn converts markdown to Slack mrkdwn: *bold*, _italic_, ~strike~, `code`,
// ```pre```, <url|text> links and "• " lists; headings become bold lines and tables aligned
// columns in a ``` block. &, < and > are escaped everywhere as Slack requires, which also
// neutralises <!channel>, <!here>, <!everyone>, <@U…> and <#C…> written in the text, and a
// zero-width space after the @ of @channel, @here and @everyone keeps them inert even for
// a client that posts with link_names. Model output must never ping anyone.
func SlackMrkdwn(md string) string {
	return render(md, flavorSlack)
}

// slackBroadcasts are the words that, after an @, notify a whole channel.
var slackBroadcasts = [...]string{"channel", "here", "everyone"}

// writeSlackEscaped writes s with &, < and > escaped and broadcast mentions broken up.
func writeSlackEscaped(b *bytes.Buffer, s string) {
	writeEscaped(b, s, func(i int) string {
		if s[i] == '@' && startsWithAnyFold(s[i+1:], slackBroadcasts[:]) {
			return "@\u200b"
		}
		return markupEntity(s[i])
	})
}

// slackLink writes <url|label>, or <url> when the label is the URL itself. The URL has been
// through util.URLEscape, so it holds no space, <, >, " or |; & still needs escaping.
func slackLink(b *bytes.Buffer, href string, bare bool, label func()) {
	b.WriteByte('<')
	b.WriteString(strings.ReplaceAll(href, "&", "&amp;"))
	if !bare {
		writeNonEmpty(b, "|", label)
	}
	b.WriteByte('>')
}

// startsWithAnyFold reports whether s starts with one of words, ignoring ASCII case.
func startsWithAnyFold(s string, words []string) bool {
	for _, w := range words {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
			return true
		}
	}
	return false
}
