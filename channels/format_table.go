package channels

import (
	"bytes"
	"strings"
	"unicode"

	extast "github.com/yuin/goldmark/extension/ast"
)

// Chat platforms have no tables, so a table becomes aligned columns of plain text in a
// monospaced block.

func (r *renderer) table(b *bytes.Buffer, t *extast.Table) {
	var rows [][]string
	header := false
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if _, ok := row.(*extast.TableHeader); ok {
			header = true
		}
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cell := strings.Join(strings.Fields(plainInline(r.src, c)), " ")
			cells = append(cells, cell)
		}
		rows = append(rows, cells)
	}
	layout := layoutTable(rows, t.Alignments, header)
	if layout == "" {
		return
	}
	switch r.f {
	case flavorTelegram:
		r.enclose(b, "<pre>", layout, "</pre>")
	case flavorSlack:
		r.enclose(b, "```\n", layout, "\n```")
	case flavorDiscord:
		discordFence(b, "", layout)
	default:
		b.WriteString(layout)
	}
}

// layoutTable aligns rows into columns separated by " │ ", with a rule under the header.
func layoutTable(rows [][]string, align []extast.Alignment, header bool) string {
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return ""
	}
	widths := make([]int, cols)
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	var b strings.Builder
	for ri, row := range rows {
		if ri > 0 {
			b.WriteByte('\n')
		}
		var line strings.Builder
		for i := range cols {
			if i > 0 {
				line.WriteString(" │ ")
			}
			var cell string
			if i < len(row) {
				cell = row[i]
			}
			a := extast.AlignNone
			if i < len(align) {
				a = align[i]
			}
			pad := widths[i] - displayWidth(cell)
			switch a {
			case extast.AlignRight:
				line.WriteString(strings.Repeat(" ", pad) + cell)
			case extast.AlignCenter:
				line.WriteString(strings.Repeat(" ", pad/2) + cell + strings.Repeat(" ", pad-pad/2))
			default:
				line.WriteString(cell + strings.Repeat(" ", pad))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		if ri == 0 && header {
			b.WriteByte('\n')
			for i, w := range widths {
				if i > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", max(w, 1)))
			}
		}
	}
	return b.String()
}

// displayWidth approximates how many monospace columns s takes: East Asian wide characters
// and most emoji take two, combining marks and joiners none. It is a heuristic good enough
// to keep CJK tables aligned; exact widths depend on the client's font.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case r == 0x200D || (r >= 0xFE00 && r <= 0xFE0F) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		case isWide(r):
			w += 2
		default:
			w++
		}
	}
	return w
}

func isWide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115F, // Hangul Jamo
		r >= 0x2E80 && r <= 0x303E, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0x33FF, // kana, CJK symbols
		r >= 0x3400 && r <= 0x4DBF, // CJK extension A
		r >= 0x4E00 && r <= 0x9FFF, // CJK unified ideographs
		r >= 0xA000 && r <= 0xA4CF, // Yi
		r >= 0xAC00 && r <= 0xD7A3, // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF, // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F, // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60, // full-width forms
		r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F, // pictographs, emoticons
		r >= 0x1F900 && r <= 0x1F9FF, // supplemental pictographs
		r >= 0x20000 && r <= 0x3FFFD: // CJK extensions B and later
		return true
	}
	return false
}
