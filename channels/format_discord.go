package channels

import (
	"bytes"
	"strings"
)

// DiscordMarkdown re-renders markdown for Discord, whose dialect is close to CommonMark:
// emphasis, code, fences, quotes, lists and #..### headings pass through; a table becomes an
// aligned ``` block; only http(s) links stay links; raw HTML and escaped punctuation are
// literal text (backslash-escaped where Discord would read markup). Mentions in the text
// (@everyone, @here, <@id>, <@&role>, <#channel>) get a zero-width space, inert even in a
// message sent without an empty allowed_mentions.
func DiscordMarkdown(md string) string {
	return render(md, flavorDiscord)
}

const zwsp = "\u200b"

// discordBroadcasts are the words that, after an @, notify everyone in a channel.
var discordBroadcasts = [...]string{"everyone", "here"}

// writeDiscordEscaped writes text with Discord's markup characters backslash-escaped and
// mentions neutralised. A mention split over two text nodes ("<" then "@123>") is caught by
// looking at what was written just before.
func writeDiscordEscaped(b *bytes.Buffer, s string) {
	lineStart := b.Len() == 0 || b.Bytes()[b.Len()-1] == '\n'
	if len(s) > 0 && (s[0] == '@' || s[0] == '#') && b.Len() > 0 && b.Bytes()[b.Len()-1] == '<' {
		b.WriteString(zwsp)
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '~', '`', '|', '[', ']':
			out.WriteByte('\\')
		case '>', '#', '-', '+':
			if lineStart {
				out.WriteByte('\\')
			}
		case '.', ')':
			// "1." at the start of a line would become an ordered list item.
			if !lineStart && lastLineStartDigits(s[:i]) {
				out.WriteByte('\\')
			}
		}
		out.WriteByte(c)
		lineStart = c == '\n' || (lineStart && (c == ' ' || c == '\t'))
	}
	b.WriteString(neutralizeDiscordMentions(out.String()))
}

// lastLineStartDigits reports whether s ends in a run of digits that starts its line.
func lastLineStartDigits(s string) bool {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return i < len(s) && (i == 0 || s[i-1] == '\n')
}

// neutralizeDiscordMentions inserts a zero-width space into every mention Discord would
// resolve: @everyone, @here, and the <@…>, <@!…>, <@&…> and <#…> forms.
func neutralizeDiscordMentions(s string) string {
	if !strings.ContainsAny(s, "@#") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '@' && startsWithAnyFold(s[i+1:], discordBroadcasts[:]) ||
			s[i] == '<' && i+1 < len(s) && (s[i+1] == '@' || s[i+1] == '#') {
			b.WriteString(s[last : i+1])
			b.WriteString(zwsp)
			last = i + 1
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// discordFence writes code in a ``` block whose info string is lang; a ``` inside the
// code is broken up so that it cannot end the block.
func discordFence(b *bytes.Buffer, lang, code string) {
	b.WriteString("```" + lang + "\n")
	b.WriteString(neutralizeDiscordMentions(strings.ReplaceAll(code, "```", "`"+zwsp+"``")))
	b.WriteString("\n```")
}

// discordCodeSpan writes code in a span whose backtick fence is longer than any backtick
// run inside it, padded with spaces when the code starts or ends with a backtick.
func discordCodeSpan(b *bytes.Buffer, code string) {
	longest, run := 0, 0
	for i := 0; i < len(code); i++ {
		if code[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", min(longest+1, 2))
	if longest >= 2 {
		// Discord spans support at most a double-backtick fence; break longer runs instead.
		code = strings.ReplaceAll(code, "``", "`"+zwsp+"`")
	}
	pad := ""
	if strings.HasPrefix(code, "`") || strings.HasSuffix(code, "`") {
		pad = " "
	}
	b.WriteString(fence + pad)
	b.WriteString(neutralizeDiscordMentions(code))
	b.WriteString(pad + fence)
}

// discordLink writes [label](url), or <url> when the label is the URL itself (text escaping
// would otherwise put backslashes into it). Only http(s) URLs are links on Discord. A URL
// is left as it is: Discord resolves no mention inside a link.
func discordLink(b *bytes.Buffer, href string, bare bool, label func()) {
	lower := strings.ToLower(href)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		label()
		return
	}
	// Parentheses would end the link early; an encoded @ keeps "@everyone" in a URL inert.
	href = strings.NewReplacer("(", "%28", ")", "%29").Replace(href)
	var enc strings.Builder
	for i := 0; i < len(href); i++ {
		if href[i] == '@' && startsWithAnyFold(href[i+1:], discordBroadcasts[:]) {
			enc.WriteString("%40")
			continue
		}
		enc.WriteByte(href[i])
	}
	href = enc.String()
	if bare {
		b.WriteString("<" + href + ">")
		return
	}
	if !writeNonEmpty(b, "[", label) {
		b.WriteString("<" + href + ">")
		return
	}
	b.WriteString("](" + href + ")")
}
