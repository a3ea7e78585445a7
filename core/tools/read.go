package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the read-only tools, besides the configured MaxOutput.
const (
	defaultReadLines  = 2000 // lines per read_file page when no limit is given
	maxLineBytes      = 2000 // longer lines are cut (minified files, data dumps)
	searchLineBytes   = 300  // text shown per search match
	sniffBytes        = 8000 // a NUL byte in the first sniffBytes marks a binary file (as git does)
	defaultListDepth  = 2
	maxListDepth      = 20
	maxListEntries    = 500
	maxSearchMatches  = 100
	maxSearchFileSize = 8 << 20 // larger files are skipped by search_files
)

// readFile prints a page of a text file with line numbers, like cat -n.
func (w *workspace) readFile(ctx context.Context, a readArgs) (string, error) {
	rel, err := cleanPath(a.Path, false)
	if err != nil {
		return "", err
	}
	if err := w.refuseHidden(rel); err != nil {
		return "", err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return "", fmt.Errorf("offset and limit must be positive line counts (got offset %d, limit %d)", a.Offset, a.Limit)
	}
	first := max(a.Offset, 1)
	limit := a.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	f, fi, err := w.openRegular(ToolReadFile, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	budget := &budgetReader{ctx: ctx, r: f, left: maxReadBytes}
	r := bufio.NewReaderSize(budget, 16<<10)
	if head, _ := r.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file (%d bytes); read_file shows text files only", rel, fi.Size())
	}
	p := &page{first: first, limit: min(limit, 1<<30), maxOut: w.maxOut} // first+limit must not overflow
	// Size the output once: the file plus line numbers, bounded by the cap and the page.
	p.out.Grow(int(min(fi.Size()+fi.Size()/4, int64(w.maxOut), int64(p.limit)*128)) + 256)
	if err := p.collect(ctx, r, budget); err != nil {
		return "", readError(rel, err)
	}
	return p.result(rel, fi.Size())
}

// page is one read_file page being collected.
type page struct {
	first, limit, maxOut int
	out                  strings.Builder
	n, last              int // lines seen; the last line shown
	crlf                 bool
	unknownEnd           bool // the read stopped at maxReadBytes
}

var cutNote = fmt.Sprintf(" … (line cut at %d bytes)", maxLineBytes)

// collect reads the page's lines from r, then counts the rest for the note.
func (p *page) collect(ctx context.Context, r *bufio.Reader, budget *budgetReader) error {
	var buf []byte
	full := false
	for {
		if p.n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if full || p.n >= p.first+p.limit-1 {
			// Counting is only for the note: it reads at most maxCountBytes more.
			budget.left = min(budget.left, maxCountBytes)
			rest, err := countRest(r)
			p.n += rest
			return p.end(err)
		}
		line, cut, used, err := readLine(r, maxLineBytes, buf)
		buf = line[:0]
		if used == 0 {
			return p.end(err)
		}
		p.n++
		if p.n >= p.first {
			full = !p.add(line, cut)
		}
		if err != nil {
			return p.end(err)
		}
	}
}

// end turns what stopped the reading into the page's state: the end of the file and the
// read budget end the page; anything else fails the call.
func (p *page) end(err error) error {
	switch {
	case err == nil || err == io.EOF:
		return nil
	case errors.Is(err, errReadBudget):
		p.unknownEnd = true
		return nil
	}
	return err
}

// add shows line n, or reports false when it does not fit the output cap any more.
func (p *page) add(line []byte, cut bool) bool {
	if !cut && len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
		p.crlf = true
	}
	size := numberedLen(p.n, line) + 1
	if cut {
		size += len(cutNote)
	}
	if p.out.Len()+size > p.maxOut && p.last >= p.first {
		return false
	}
	writeNumbered(&p.out, p.n, line)
	if cut {
		p.out.WriteString(cutNote)
	}
	p.out.WriteByte('\n')
	p.last = p.n
	return true
}

// result is the page with its notes: line endings, and where the file goes on.
func (p *page) result(rel string, size int64) (string, error) {
	first, last, n := p.first, p.last, p.n
	switch {
	case n == 0 && !p.unknownEnd:
		return fmt.Sprintf("(%s is empty)", rel), nil
	case first > n && p.unknownEnd:
		return "", fmt.Errorf("offset %d is beyond what read_file reads of %s: it stops after the first %d MiB (%d lines) of a file", first, rel, maxReadBytes>>20, n)
	case first > n:
		return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", first, rel, n)
	}
	out := &p.out
	if p.crlf {
		out.WriteString("(this file uses CRLF line endings; the \\r is not shown)\n")
	}
	switch {
	case p.unknownEnd:
		fmt.Fprintf(out, "(showing lines %d-%d of more than %d: %s is %d bytes, too large to count to its end", first, last, n, rel, size)
	case first > 1 || last < n:
		fmt.Fprintf(out, "(showing lines %d-%d of %d", first, last, n)
	default:
		return out.String(), nil
	}
	if last < n {
		fmt.Fprintf(out, "; read_file with offset %d reads on", last+1)
	}
	out.WriteString(")\n")
	return out.String(), nil
}

// readError words an error that ended a read: a cancelled turn, or a file system error.
func readError(rel string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("reading %s stopped: %w", rel, err)
	}
	return fsError(rel, err)
}

// countRest counts the lines left in r; a last line without a newline counts too. It
// reads through r's own buffer, so counting allocates nothing.
func countRest(r *bufio.Reader) (int, error) {
	lines, partial := 0, false
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case err == nil:
			lines++
			partial = false
		case errors.Is(err, bufio.ErrBufferFull):
			partial = true
		case err == io.EOF:
			if partial || len(chunk) > 0 {
				lines++
			}
			return lines, nil
		default:
			return lines, err
		}
	}
}

// numberedLen is the length writeNumbered produces for a valid UTF-8 line.
func numberedLen(n int, line []byte) int {
	digits := 1
	for v := n; v >= 10; v /= 10 {
		digits++
	}
	return max(6, digits) + 1 + len(line)
}

// writeNumbered writes "%6d\t%s" as cat -n does, without fmt (this is the hot loop of
// read_file) and with invalid UTF-8 replaced, so the model gets valid text.
func writeNumbered(b *strings.Builder, n int, line []byte) {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for range 6 - len(digits) {
		b.WriteByte(' ')
	}
	b.Write(digits)
	b.WriteByte('\t')
	if utf8.Valid(line) {
		b.Write(line)
	} else {
		b.WriteString(strings.ToValidUTF8(string(line), "\uFFFD"))
	}
}

// readLine reads one line without its newline, keeping at most limit bytes of it (cut
// reports that more were dropped). used is the number of bytes consumed; used == 0 with
// io.EOF means the input is exhausted. buf is reused for the result.
func readLine(r *bufio.Reader, limit int, buf []byte) (line []byte, cut bool, used int, err error) {
	line = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		used += len(chunk)
		data := chunk
		if err == nil {
			data = chunk[:len(chunk)-1]
		}
		if room := limit - len(line); room > 0 {
			take := min(room, len(data))
			line = append(line, data[:take]...)
			if take < len(data) {
				cut = true
			}
		} else if len(data) > 0 {
			cut = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cut {
			line = trimPartialRune(line)
		}
		return line, cut, used, err
	}
}

// trimPartialRune drops an incomplete UTF-8 sequence left at the end of b by a cut.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// listFiles prints the entries under a directory, one workspace-relative path per line.
func (w *workspace) listFiles(ctx context.Context, a listArgs) (string, error) {
	start, err := cleanPath(a.Path, true)
	if err != nil {
		return "", err
	}
	if err := w.refuseHidden(start); err != nil {
		return "", err
	}
	depth, err := listDepth(a)
	if err != nil {
		return "", err
	}
	fi, err := w.root.Stat(start)
	if err != nil {
		return "", fsError(start, err)
	}
	if !fi.IsDir() {
		return start + "\n", nil
	}
	var (
		out     strings.Builder
		entries int
		note    string
	)
	unreadable := func(p string, err error) { fmt.Fprintf(&out, "%s (unreadable: %v)\n", p, fsError(p, err)) }
	walkErr := w.walk(ctx, start, unreadable, func(p string, d fs.DirEntry) error {
		if p == start {
			return nil
		}
		if entries >= maxListEntries || out.Len() >= w.maxOut {
			note = fmt.Sprintf("(listing stopped after %d entries; narrow it with path, pattern or depth)\n", entries)
			return fs.SkipAll
		}
		if a.Pattern == "" || globName(a.Pattern, d.Name()) {
			entries++
			w.listEntry(&out, p, d)
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(p, start+"/"), "/")+1 >= depth {
			return fs.SkipDir
		}
		return nil
	})
	if walkErr != nil {
		return "", fmt.Errorf("listing %s: %w", start, walkErr)
	}
	if entries == 0 {
		if a.Pattern != "" {
			return fmt.Sprintf("no names match %q under %s (depth %d)", a.Pattern, start, depth), nil
		}
		return fmt.Sprintf("%s is empty", start), nil
	}
	out.WriteString(note)
	return out.String(), nil
}

// walk calls fn for start and what lies under it, skipping .git and the hidden paths
// below start. An error reading start ends the walk; onErr, when set, hears of one below.
func (w *workspace) walk(ctx context.Context, start string, onErr func(string, error), fn func(string, fs.DirEntry) error) error {
	return fs.WalkDir(w.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == start:
			return fsError(start, err)
		case err != nil:
			if onErr != nil {
				onErr(p, err)
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p != start && (d.Name() == ".git" || w.isHidden(p)) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, d)
	})
}

// listDepth checks list_files' depth and pattern and returns the depth to walk.
func listDepth(a listArgs) (int, error) {
	if a.Depth < 0 {
		return 0, fmt.Errorf("depth must be 1 or more (got %d)", a.Depth)
	}
	depth := a.Depth
	if depth == 0 {
		depth = defaultListDepth
	}
	if err := checkGlob("pattern", a.Pattern); err != nil {
		return 0, err
	}
	return min(depth, maxListDepth), nil
}

// listEntry writes one line of a listing: directories end in "/", links show their target.
func (w *workspace) listEntry(out *strings.Builder, p string, d fs.DirEntry) {
	switch {
	case d.IsDir():
		out.WriteString(p + "/\n")
	case d.Type()&fs.ModeSymlink != 0:
		target, _ := w.root.Readlink(p)
		fmt.Fprintf(out, "%s -> %s\n", p, target)
	default:
		out.WriteString(p + "\n")
	}
}

// checkGlob refuses a malformed glob up front, instead of matching nothing silently.
func checkGlob(field, pattern string) error {
	if pattern == "" {
		return nil
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("%s %q is not a valid glob: use *, ? and [abc], e.g. *.md", field, pattern)
	}
	return nil
}

func globName(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}
