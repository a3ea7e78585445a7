package telegram

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// sendPlan sends a proposed plan as a document: the file, a caption with the first lines
// of the reply and the decision buttons; a reply longer than the caption follows as a
// message. It returns the ids of the first message and of the one with the buttons, and
// the caption as plain text (for the decision line added later; "" if it went as text).
func (c *Channel) sendPlan(ctx context.Context, chat int64, thread int, r core.Reply, kb models.ReplyMarkup) (first, withButtons int, plain string, err error) {
	caption, shown, complete := buildCaption(plainLines(r.Text), "")
	plain = strings.Join(shown, "\n")
	id, err := c.sendDocument(ctx, chat, thread, r.Attachments[0], caption, kb)
	if err != nil {
		// Without its file the plan still reaches the chat, buttons and all.
		c.log.Error("sending the plan file failed; sending the plan as text", "chat", chat, "err", err)
		first, last, terr := c.sendChunks(ctx, chat, thread, htmlChunks(r.Text), kb)
		if terr != nil {
			return first, last, "", fmt.Errorf("sending plan: %w (as text: %w)", err, terr)
		}
		return first, last, "", nil
	}
	if !complete {
		if _, _, err := c.sendChunks(ctx, chat, thread, htmlChunks(r.Text), nil); err != nil {
			return id, id, plain, err
		}
	}
	for _, f := range r.Attachments[1:] {
		if _, err := c.sendDocument(ctx, chat, thread, f, "", nil); err != nil {
			return id, id, plain, err
		}
	}
	return id, id, plain, nil
}

// sendLong sends a reply too long for chat reading as reply.md with a short caption.
func (c *Channel) sendLong(ctx context.Context, chat int64, thread int, r core.Reply, kb models.ReplyMarkup) (int, error) {
	lines := plainLines(r.Text)
	head := ""
	if len(lines) > 0 {
		head = clip(lines[0], 200)
	}
	caption, _, _ := buildCaption([]string{head, "The full reply is attached (reply.md)."}, "")
	id, err := c.sendDocument(ctx, chat, thread, channels.ReplyFile(r.Text), caption, kb)
	if err != nil {
		c.log.Error("sending a long reply as a file failed; sending it as messages", "chat", chat, "err", err)
		first, _, terr := c.sendChunks(ctx, chat, thread, htmlChunks(r.Text), kb)
		if terr != nil {
			return first, fmt.Errorf("sending long reply: %w (as messages: %w)", err, terr)
		}
		return first, nil
	}
	return id, nil
}

// sendDocument uploads f with an HTML caption ("" for none).
func (c *Channel) sendDocument(ctx context.Context, chat int64, thread int, f core.File, caption string, markup models.ReplyMarkup) (int, error) {
	name, data, err := channels.Attachment(f)
	if err != nil {
		return 0, err
	}
	send := func(caption string, mode models.ParseMode) (int, error) {
		var sent *models.Message
		err := c.do(ctx, chat, true, "sendDocument", func(ctx context.Context) error {
			var err error
			sent, err = c.b.SendDocument(ctx, &bot.SendDocumentParams{
				ChatID: chat, MessageThreadID: thread, Caption: caption, ParseMode: mode, ReplyMarkup: markup,
				Document: &models.InputFileUpload{Filename: name, Data: bytes.NewReader(data)},
			})
			return err
		})
		if err != nil {
			return 0, err
		}
		return sent.ID, nil
	}
	var mode models.ParseMode
	if caption != "" {
		mode = models.ParseModeHTML
	}
	id, err := send(caption, mode)
	if isEntityError(err) {
		c.log.Warn("telegram rejected the caption's formatting; using plain text", "chat", chat, "err", err)
		id, err = send(htmlToPlain(caption), "")
	}
	return id, err
}

// plainLines is a reply's text as plain, non-empty lines.
func plainLines(md string) []string {
	var out []string
	for _, l := range strings.Split(channels.PlainText(md), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// buildCaption makes an HTML caption within 1024 units: the first line bold, as many
// further lines as fit (the last cut short if need be), then decision in italics, which
// always fits. shown is the lines as shown, complete whether all are there in full.
func buildCaption(lines []string, decision string) (caption string, shown []string, complete bool) {
	var tail string
	if decision != "" {
		tail = "\n\n<i>" + html.EscapeString(clip(decision, 300)) + "</i>"
	}
	budget := maxCaption - channels.UTF16Len(tail)
	piece := func(i int, l string) string {
		if i == 0 {
			return "<b>" + html.EscapeString(l) + "</b>"
		}
		return "\n" + html.EscapeString(l)
	}
	var b strings.Builder
	used := 0
	for i, l := range lines {
		p := piece(i, l)
		if n := channels.UTF16Len(p); used+n <= budget {
			b.WriteString(p)
			used += n
			shown = append(shown, l)
			continue
		}
		// Cut the line to what fits, if enough fits to be worth reading.
		if cut := fitLine(l, budget-used, func(s string) string { return piece(i, s) }); cut != "" {
			b.WriteString(piece(i, cut))
			shown = append(shown, cut)
		}
		return b.String() + tail, shown, false
	}
	return b.String() + tail, shown, true
}

// fitLine returns the longest clip of l whose rendering fits room, or "" if under 20
// characters would.
func fitLine(l string, room int, render func(string) string) string {
	lo, hi := 0, utf8.RuneCountInString(l) // clip to lo runes fits; hi does not
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if channels.UTF16Len(render(clipRunes(l, mid))) <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo < 20 {
		return ""
	}
	return clipRunes(l, lo)
}

// clipRunes cuts l to n runes, the last being an ellipsis.
func clipRunes(l string, n int) string {
	r := []rune(l)
	if n >= len(r) {
		return l
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// htmlToPlain turns Telegram HTML back into the text it shows (a link's address after its
// text). It is the fallback when Telegram rejects the markup, so it trusts no markup.
func htmlToPlain(h string) string {
	var b strings.Builder
	var hrefs []string
	var starts []int
	for len(h) > 0 {
		i := strings.IndexByte(h, '<')
		if i < 0 {
			b.WriteString(html.UnescapeString(h))
			break
		}
		b.WriteString(html.UnescapeString(h[:i]))
		j := strings.IndexByte(h[i:], '>')
		if j < 0 {
			b.WriteString(html.UnescapeString(h[i:]))
			break
		}
		tag := h[i+1 : i+j]
		h = h[i+j+1:]
		switch {
		case strings.HasPrefix(tag, "a ") || tag == "a":
			hrefs = append(hrefs, attr(tag, "href"))
			starts = append(starts, b.Len())
		case tag == "/a" && len(hrefs) > 0:
			href, start := hrefs[len(hrefs)-1], starts[len(starts)-1]
			hrefs, starts = hrefs[:len(hrefs)-1], starts[:len(starts)-1]
			if href != "" && b.String()[start:] != href {
				b.WriteString(" (" + href + ")")
			}
		}
	}
	return b.String()
}

// attr reads a double-quoted attribute of a tag.
func attr(tag, name string) string {
	_, rest, ok := strings.Cut(tag, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return html.UnescapeString(v)
}
