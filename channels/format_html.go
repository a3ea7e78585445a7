package channels

import (
	"strings"
	"unicode/utf8"
)

// A tokenizer for the HTML that TelegramHTML writes, so that SplitHTML cuts only between
// whole tags, entities and characters; anything it does not recognise is text.

type htmlTokenKind int

const (
	htmlText   htmlTokenKind = iota + 1 // one character
	htmlEntity                          // &amp; &#128512; ...
	htmlOpen                            // <b>, <a href="...">
	htmlClose                           // </b>
)

// maxTagLen bounds what is taken for a tag; TelegramHTML's longest tags are links, whose
// URLs it keeps shorter than this.
const maxTagLen = 4096

// nextHTMLToken returns the end of the token that starts at s[i], its kind and, for a tag,
// its lower-case name.
func nextHTMLToken(s string, i int) (end int, kind htmlTokenKind, name string) {
	switch s[i] {
	case '<':
		j := strings.IndexByte(s[i:min(len(s), i+maxTagLen)], '>')
		if j > 1 {
			tag := s[i+1 : i+j]
			closing := tag[0] == '/'
			if closing {
				tag = tag[1:]
			}
			n := 0
			for n < len(tag) && (tag[n] >= 'a' && tag[n] <= 'z' || tag[n] >= 'A' && tag[n] <= 'Z' || n > 0 && tag[n] >= '0' && tag[n] <= '9' || tag[n] == '-') {
				n++
			}
			if n > 0 && (n == len(tag) || tag[n] == ' ') && !strings.HasSuffix(tag, "/") {
				kind = htmlOpen
				if closing {
					kind = htmlClose
				}
				return i + j + 1, kind, strings.ToLower(tag[:n])
			}
		}
	case '&':
		j := strings.IndexByte(s[i:min(len(s), i+12)], ';')
		if j > 1 && isEntityBody(s[i+1:i+j]) {
			return i + j + 1, htmlEntity, ""
		}
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	return i + size, htmlText, ""
}

func isEntityBody(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '#' && i == 0) {
			return false
		}
	}
	return true
}

// openTag is an element open at some point of the input.
type openTag struct {
	name, tag string
	// dropped tags were too long to repeat at every split; their text stays, the element
	// (and its closing tag) does not.
	dropped bool
}

func closeTagLen(name string) int { return len(name) + 3 }

// htmlStack tracks the open elements while the input is scanned.
type htmlStack struct {
	tags      []openTag
	closeCost int // UTF-16 units of the closing tags of the kept elements
}

func (st *htmlStack) clone() htmlStack {
	return htmlStack{tags: append([]openTag(nil), st.tags...), closeCost: st.closeCost}
}

// step consumes the token at s[i] and returns its end and the text to emit for it (empty
// for a dropped element's tags and for a closing tag that closes nothing). An opening tag
// dearer than maxTag units (with its closing tag) is dropped.
func (st *htmlStack) step(s string, i, maxTag int) (end int, emit string, kind htmlTokenKind) {
	end, kind, name := nextHTMLToken(s, i)
	tok := s[i:end]
	switch kind {
	case htmlOpen:
		t := openTag{name: name, tag: tok}
		if UTF16Len(tok)+closeTagLen(name) > maxTag {
			t.dropped = true
			tok = ""
		} else {
			st.closeCost += closeTagLen(name)
		}
		st.tags = append(st.tags, t)
	case htmlClose:
		j := len(st.tags) - 1
		for j >= 0 && st.tags[j].name != name {
			j--
		}
		if j < 0 {
			return end, "", kind // closes nothing: leaving it out keeps the chunk well-formed
		}
		if j == len(st.tags)-1 {
			t := st.tags[j]
			st.tags = st.tags[:j]
			if t.dropped {
				return end, "", kind
			}
			st.closeCost -= closeTagLen(name)
			return end, tok, kind
		}
		// Elements left open inside this one are closed with it.
		var b strings.Builder
		for k := len(st.tags) - 1; k >= j; k-- {
			if st.tags[k].dropped {
				continue
			}
			st.closeCost -= closeTagLen(st.tags[k].name)
			b.WriteString("</" + st.tags[k].name + ">")
		}
		st.tags = st.tags[:j]
		tok = b.String()
	}
	return end, tok, kind
}

// opening returns the tags that reopen the kept elements.
func (st *htmlStack) opening() string {
	var b strings.Builder
	for _, t := range st.tags {
		if !t.dropped {
			b.WriteString(t.tag)
		}
	}
	return b.String()
}

// closing returns the tags that close the kept elements, innermost first.
func (st *htmlStack) closing() string {
	var b strings.Builder
	for k := len(st.tags) - 1; k >= 0; k-- {
		if !st.tags[k].dropped {
			b.WriteString("</" + st.tags[k].name + ">")
		}
	}
	return b.String()
}

// shed drops the dearest kept elements until reopening and closing them costs at most
// budget units, so that every chunk has room for text.
func (st *htmlStack) shed(budget int) {
	for UTF16Len(st.opening())+st.closeCost > budget {
		dearest := -1
		for k, t := range st.tags {
			if !t.dropped && (dearest < 0 || len(t.tag) > len(st.tags[dearest].tag)) {
				dearest = k
			}
		}
		if dearest < 0 {
			return
		}
		st.tags[dearest].dropped = true
		st.closeCost -= closeTagLen(st.tags[dearest].name)
	}
}
