package plan

import "strings"

// Undoing the writer's escaping (EscapeMarkdown, codeSpan) for ParseMarkdown. Each
// function returns text in the form the writer keeps, so parsing what it writes gives
// back the same text.

// entityEmDash is how an em dash inside a risk is written (see riskLine).
const entityEmDash = "&#8212;"

// fileText reads one line of escaped text: backslash escapes are undone, the zero-width
// spaces the writer puts into mentions are removed, characters the writer drops are
// dropped and white space is collapsed. With emDash, the entity &#8212; is an em dash.
func fileText(raw string, emDash bool) string {
	s := unescapeMarkdown(stripUnsafe(raw), emDash)
	return strings.Join(strings.Fields(unguardMentions(s)), " ")
}

// fileBlock reads the lines of a multi-line text part (the summary): each line as
// fileText, with runs of blank lines kept as one paragraph break.
func fileBlock(lines []string) string {
	return paragraphs(lines, func(l string) string { return fileText(l, false) })
}

// scopeText reads one scope entry: a code span is verbatim, anything else escaped text.
func scopeText(item string) string {
	if len(item) >= 2 && item[0] == '`' && item[len(item)-1] == '`' && !strings.Contains(item[1:len(item)-1], "`") {
		s := strings.TrimSpace(unguardMentions(item[1 : len(item)-1]))
		if codeSpanVerbatim(s) {
			return s
		}
		return strings.Join(strings.Fields(stripUnsafe(s)), " ")
	}
	return fileText(item, false)
}

// codeSpanVerbatim reports whether codeSpan writes s verbatim inside backticks.
func codeSpanVerbatim(s string) bool {
	return s != "" && !strings.ContainsAny(s, "`\t\n\r") && strings.IndexFunc(s, isUnsafeRune) < 0 && s == strings.TrimSpace(s)
}

// unescapeMarkdown drops the backslash before ASCII punctuation; other backslashes are
// text.
func unescapeMarkdown(s string, emDash bool) string {
	if !strings.ContainsAny(s, `\&`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteByte(s[i+1])
			i++
		case emDash && c == '&' && strings.HasPrefix(s[i:], entityEmDash):
			b.WriteString("—")
			i += len(entityEmDash) - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// unguardMentions removes the zero-width space the writer puts after the @ of a mention
// and after "<!", exactly where escapeMarkdownLine and codeSpan put it.
func unguardMentions(s string) string {
	if !strings.ContainsRune(s, zeroWidthSpace) {
		return s
	}
	rs := []rune(s)
	out := make([]rune, 0, len(rs))
	for i := 0; i < len(rs); i++ {
		out = append(out, rs[i])
		if i+1 >= len(rs) || rs[i+1] != zeroWidthSpace {
			continue
		}
		n := len(out) - 1
		switch {
		case rs[i] == '!' && n > 0 && out[n-1] == '<':
			i++
		case rs[i] == '@' && i+2 < len(rs) && mentionAt(append(out[:n+1:n+1], rs[i+2]), n):
			i++
		}
	}
	return string(out)
}
