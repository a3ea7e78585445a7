package channels

// A reply longer than a platform's cap goes out as several messages, split after
// formatting (which changes the length) so that no chunk has a broken UTF-8 sequence or
// UTF-16 surrogate pair, a tag or entity cut in half, or formatting left open.

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/util"
)

// UTF16Len is the length of s in UTF-16 code units, the unit Telegram's limits are counted
// in: characters outside the Basic Multilingual Plane (most emoji) count two.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// breakKind ranks a cut position: higher is a nicer place to end a chunk.
type breakKind int

const (
	breakNone breakKind = iota // would split a character sequence or leave an empty element
	breakRune                  // between two characters
	breakWord                  // after a space or CJK punctuation
	breakLine                  // after a line break
	breakPara                  // after a blank line
	breakKinds
)

// cutPicker collects the cut positions that fit, offered in increasing order, and picks
// the best: the last paragraph, line or word break in the second half of the budget, in
// that order of preference; failing that, the latest break of any kind.
type cutPicker struct {
	half int
	pos  [breakKinds]int
	used [breakKinds]int
}

func newCutPicker(budget int) cutPicker {
	p := cutPicker{half: budget / 2}
	for k := range p.pos {
		p.pos[k] = -1
	}
	return p
}

func (p *cutPicker) offer(pos, used int, k breakKind) {
	p.pos[k], p.used[k] = pos, used
}

func (p *cutPicker) pick() int {
	for _, k := range [...]breakKind{breakPara, breakLine, breakWord} {
		if p.pos[k] >= 0 && p.used[k] >= p.half {
			return p.pos[k]
		}
	}
	best := -1
	for k := breakRune; k < breakKinds; k++ {
		best = max(best, p.pos[k])
	}
	if best < 0 {
		best = p.pos[breakNone]
	}
	return best
}

// classify ranks the boundary between prev and next, where prev2 precedes prev; a rune of
// -1 means none.
func classify(prev2, prev, next rune) breakKind {
	switch {
	case prev == '\n' && prev2 == '\n':
		return breakPara
	case prev == '\n':
		return breakLine
	case prev == '\r' && next == '\n':
		return breakNone
	case prev == ' ' || prev == '\t' || isCJKPunct(prev):
		return breakWord
	case joins(prev, next):
		return breakNone
	}
	return breakRune
}

// joins reports whether prev and next belong to one visible character: an emoji with its
// modifier, variation selector or zero-width joiner, a flag's two regional indicators, a
// letter and its combining mark. Splitting there shows broken glyphs on both sides.
func joins(prev, next rune) bool {
	switch {
	case prev < 0 || next < 0:
		return false
	case prev == 0x200D || next == 0x200D,
		next >= 0xFE00 && next <= 0xFE0F,
		next >= 0xE0100 && next <= 0xE01EF,
		next >= 0x1F3FB && next <= 0x1F3FF,
		next >= 0xE0020 && next <= 0xE007F,
		isRegional(prev) && isRegional(next):
		return true
	case next < 0x300:
		return false
	}
	return unicode.In(next, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

func isCJKPunct(r rune) bool {
	switch r {
	case '。', '，', '、', '！', '？', '；', '：', '）', '」', '』', '…':
		return true
	}
	return false
}

// lastRunes returns the last two runes of s (-1 where missing).
func lastRunes(s string) (prev2, prev rune) {
	prev2, prev = -1, -1
	if s == "" {
		return
	}
	r, size := utf8.DecodeLastRuneInString(s)
	prev = r
	if len(s) > size {
		prev2, _ = utf8.DecodeLastRuneInString(s[:len(s)-size])
	}
	return
}

func firstRune(s string) rune {
	if s == "" {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// SplitText splits plain or markdown text into chunks of at most limit units, measured by
// length, which must be additive over concatenation: UTF16Len for Telegram and wherever a
// platform's unit is unclear (it is never less than the rune count), utf8.RuneCountInString
// for Slack. It prefers to cut after a paragraph, then a line, then a word; never inside a
// UTF-8 sequence, and when it can help it not inside an emoji or a letter with its accents.
// A fenced code block that must be split is closed at the end of one chunk and reopened
// with its info string at the start of the next; the added fence lines count toward the
// limit. Otherwise the chunks are consecutive pieces of s, less the pieces that are only
// whitespace (platforms reject empty messages). A character too long for limit is
// returned alone.
func SplitText(s string, limit int, length func(string) int) []string {
	var out []string
	for _, p := range splitText(s, limit, length) {
		if c := p.prefix + p.body + p.suffix; strings.TrimSpace(c) != "" {
			out = append(out, c)
		}
	}
	return out
}

// textChunk is one chunk of SplitText: body is a piece of the input, prefix and suffix the
// fence lines added around it. The bodies of splitText's chunks partition the input.
type textChunk struct{ prefix, body, suffix string }

func splitText(s string, limit int, length func(string) int) []textChunk {
	if length(s) <= limit {
		return []textChunk{{body: s}}
	}
	fences := findFences(s)
	var out []textChunk
	for pos := 0; pos < len(s); {
		c, next := cutText(s, pos, limit, length, fences)
		if next <= pos {
			// The fence lines leave no room: split this chunk as if it were plain text.
			c, next = cutText(s, pos, limit, length, nil)
		}
		if next <= pos {
			_, size := utf8.DecodeRuneInString(s[pos:])
			c, next = textChunk{body: s[pos : pos+size]}, pos+size
		}
		out = append(out, c)
		pos = next
	}
	return out
}

// cutText makes the chunk that starts at pos and returns it with the position of the next
// one; next == pos when nothing fits.
func cutText(s string, pos, limit int, length func(string) int, fences []fence) (textChunk, int) {
	var prefix string
	if f := fenceAt(fences, pos); f != nil && pos >= f.contentStart && pos < f.contentEnd {
		prefix = f.reopen
	}
	used := length(prefix)
	picker := newCutPicker(limit - used)
	base := used
	prev2, prev := lastRunes(s[:pos])
	// Cuts inside an entity (Slack's &amp;) or an <...> span (a Slack link, a Discord
	// mention) would show broken markup; they are kept as a last resort.
	atomicEnd, angle := 0, false
	for q := pos; q < len(s); {
		r, size := utf8.DecodeRuneInString(s[q:])
		used += length(s[q : q+size])
		if used > limit {
			break
		}
		switch r {
		case '&':
			if n := entityLen(s[q:]); n > 0 {
				atomicEnd = q + n
			}
		case '<':
			angle = true
		case '>', '\n':
			angle = false
		}
		prev2, prev = prev, r
		q += size
		if q == len(s) {
			// The rest fits. An unclosed fence stays unclosed, as in the input.
			return textChunk{prefix: prefix, body: s[pos:]}, q
		}
		suffix, ok := fenceSuffix(s, fences, q)
		if !ok {
			continue
		}
		total := used + length(suffix)
		if total > limit {
			continue
		}
		k := classify(prev2, prev, firstRune(s[q:]))
		if q < atomicEnd || angle {
			k = breakNone
		}
		picker.offer(q, total-base, k)
	}
	cut := picker.pick()
	if cut <= pos {
		return textChunk{}, pos
	}
	suffix, _ := fenceSuffix(s, fences, cut)
	return textChunk{prefix: prefix, body: s[pos:cut], suffix: suffix}, cut
}

// fence is a fenced code block found in the text: byte offsets of its opening line, its
// content and the end of its closing line (len(s) when it is never closed), and the lines
// that reopen and close it around a split.
type fence struct {
	start, contentStart, contentEnd, end int
	reopen, close, closeAfterText        string
}

// findFences finds the fenced code blocks of s line by line by CommonMark's rules (three or
// more backticks or tildes; no backtick in a backtick fence's info; a closing fence of the
// same character, at least as many, and nothing else), but at any indentation, so that
// fences inside list items are found too.
func findFences(s string) []fence {
	var out []fence
	var cur *fence
	var char byte
	var run int
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		next := len(s)
		if end < 0 {
			end = len(s)
		} else {
			end += start
			next = end + 1
		}
		line := s[start:end]
		body := strings.TrimLeft(line, " \t")
		n := 0
		for n < len(body) && (body[n] == '`' || body[n] == '~') && body[n] == body[0] {
			n++
		}
		switch {
		case cur == nil && n >= 3:
			info := strings.TrimSpace(body[n:])
			if body[0] == '`' && strings.Contains(info, "`") {
				break
			}
			indent := line[:len(line)-len(body)]
			open := indent + body[:n]
			reopen := open
			if info != "" {
				reopen += info
			}
			cur = &fence{start: start, contentStart: next, reopen: reopen + "\n", close: open, closeAfterText: "\n" + open}
			char, run = body[0], n
		case cur != nil && n >= run && body[0] == char && strings.TrimSpace(body[n:]) == "":
			cur.contentEnd, cur.end = start, next
			out = append(out, *cur)
			cur = nil
		}
		start = next
	}
	if cur != nil {
		cur.contentEnd, cur.end = len(s), len(s)
		out = append(out, *cur)
	}
	return out
}

// fenceAt returns the fence whose lines span pos (start < pos < end), or nil.
func fenceAt(fences []fence, pos int) *fence {
	i := sort.Search(len(fences), func(i int) bool { return fences[i].start >= pos }) - 1
	if i >= 0 && pos < fences[i].end {
		return &fences[i]
	}
	return nil
}

// fenceSuffix returns what a chunk that ends at q must append to close a fence, and false
// when q is inside or just after an opening fence line or at or inside a closing one.
func fenceSuffix(s string, fences []fence, q int) (string, bool) {
	f := fenceAt(fences, q)
	switch {
	case f == nil:
		return "", true
	case q <= f.contentStart:
		return "", false
	case q < f.contentEnd:
		if s[q-1] == '\n' {
			return f.close, true
		}
		return f.closeAfterText, true
	}
	return "", false
}

// SplitHTML splits Telegram HTML (as TelegramHTML writes it) into chunks of at most limit
// UTF-16 units without cutting a tag, an entity or a character. Elements open at a cut are
// closed at the end of the chunk and reopened at the start of the next, so every chunk is
// well-formed, and the added tags count toward the limit (conservative: Telegram counts
// after parsing). Cuts prefer paragraph, line and word breaks, and avoid leaving an element
// empty. An element whose tags would take more than half a chunk (a link with an enormous
// URL), or the dearest of those open at a cut when together they would, is left out,
// keeping its text; so is a chunk with no visible text.
func SplitHTML(html string, limit int) []string {
	var out []string
	for _, p := range splitHTML(html, limit) {
		if p.visible {
			out = append(out, p.prefix+p.body+p.suffix)
		}
	}
	return out
}

// htmlChunk is one chunk of SplitHTML: body is the input between two cuts (less the tags of
// dropped elements), prefix and suffix the tags added to reopen and close elements, and
// visible says whether it has any text that is not whitespace.
type htmlChunk struct {
	prefix, body, suffix string
	visible              bool
}

func splitHTML(s string, limit int) []htmlChunk {
	if UTF16Len(s) <= limit {
		return []htmlChunk{{body: s, visible: hasVisibleText(s)}}
	}
	var out []htmlChunk
	var st htmlStack
	for pos := 0; pos < len(s); {
		st.shed(limit / 2)
		prefix := st.opening()
		cut := cutHTML(s, pos, limit, UTF16Len(prefix), st.clone())
		// Emit the chunk by replaying the scan up to the cut.
		var body strings.Builder
		body.Grow(cut - pos)
		visible := false
		for i := pos; i < cut; {
			end, emit, kind := st.step(s, i, limit/2)
			if kind != htmlOpen && kind != htmlClose && strings.TrimSpace(emit) != "" {
				visible = true
			}
			body.WriteString(emit)
			i = end
		}
		out = append(out, htmlChunk{prefix: prefix, body: body.String(), suffix: st.closing(), visible: visible})
		pos = cut
	}
	return out
}

// cutHTML returns where the chunk that starts at pos, after prefixCost units of reopened
// tags, should end; st is the element stack at pos and is consumed. It always makes
// progress: if not even one token fits, the chunk is that token.
func cutHTML(s string, pos, limit, prefixCost int, st htmlStack) int {
	picker := newCutPicker(limit - prefixCost)
	used := prefixCost
	prev2, prev := rune(-1), rune(-1)
	first := -1
	for i := pos; i < len(s); {
		end, emit, kind := st.step(s, i, limit/2)
		if first < 0 {
			first = end
		}
		used += UTF16Len(emit)
		if used > limit {
			break
		}
		if kind == htmlText || kind == htmlEntity {
			r, _ := utf8.DecodeRuneInString(s[i:end])
			if kind == htmlEntity {
				r = '&'
			}
			prev2, prev = prev, r
		}
		i = end
		if used+st.closeCost > limit {
			continue
		}
		if i == len(s) {
			return i
		}
		k := breakNone
		if kind != htmlOpen && !strings.HasPrefix(s[i:], "</") {
			next := rune(-1)
			if s[i] != '<' && s[i] != '&' {
				next = firstRune(s[i:])
			}
			k = classify(prev2, prev, next)
		}
		picker.offer(i, used-prefixCost, k)
	}
	if cut := picker.pick(); cut > pos {
		return cut
	}
	return first
}

// hasVisibleText reports whether the HTML s has text other than whitespace.
func hasVisibleText(s string) bool {
	for i := 0; i < len(s); {
		end, kind, _ := nextHTMLToken(s, i)
		if kind != htmlOpen && kind != htmlClose && strings.TrimSpace(s[i:end]) != "" {
			return true
		}
		i = end
	}
	return false
}

// entityLen returns the length of the HTML entity or character reference (&amp;, &#35;,
// &#x23;) at the start of s, or 0.
func entityLen(s string) int {
	end := strings.IndexByte(s[:min(len(s), 40)], ';')
	if end < 2 {
		return 0
	}
	body := s[1:end]
	if body[0] == '#' {
		body = body[1:]
		if len(body) > 0 && (body[0] == 'x' || body[0] == 'X') {
			body = body[1:]
		}
		if body == "" {
			return 0
		}
	}
	for i := 0; i < len(body); i++ {
		if !util.IsAlphaNumeric(body[i]) {
			return 0
		}
	}
	return end + 1
}
