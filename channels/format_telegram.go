package channels

// TelegramHTML converts markdown to the HTML subset Telegram's parse_mode=HTML accepts: <b>,
// <i>, <s>, <code>, <pre>, <pre><code class="language-x">, <a href> and <blockquote>. All
// text is HTML-escaped; headings become bold lines; list items become "• " or "1. " lines
// (task items keep "[ ]" and "[x]" as text); a table becomes a <pre> block of aligned
// columns; an image becomes a link to it. Raw HTML in the markdown is escaped, never passed
// through, and only http(s), tg and mailto links become <a>; other links keep their label.
//
// The output respects Telegram's nesting rules: no code or link inside a link and no
// blockquote inside a blockquote. Split it with SplitHTML, not SplitText.
func TelegramHTML(md string) string {
	return render(md, flavorTelegram)
}

// PlainText renders markdown as readable plain text, the fallback when a platform rejects
// the formatted version: markup characters are gone, except list bullets ("• ", "1. "),
// task boxes ("[ ]"), quote bars ("│ "), four-space indentation for code, and the column
// rules of a table. Links keep their destination in parentheses after the label.
func PlainText(md string) string {
	return render(md, flavorPlain)
}
