package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
)

// searchFiles prints file:line: text for each line matching a regular expression.
func (w *workspace) searchFiles(ctx context.Context, a searchArgs) (string, error) {
	if a.Pattern == "" {
		return "", errors.New("pattern is required: a regular expression (Go RE2 syntax), e.g. (?i)todo")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q is not a valid regular expression (Go RE2 syntax; escape special characters such as ( [ . with \\): %v",
			a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	start, err := cleanPath(a.Path, true)
	if err != nil {
		return "", err
	}
	if err := w.refuseHidden(start); err != nil {
		return "", err
	}
	if err := checkGlob("glob", a.Glob); err != nil {
		return "", err
	}
	if _, err := w.root.Stat(start); err != nil {
		return "", fsError(start, err)
	}
	s := &search{w: w, re: re}
	// An unreadable directory is not worth failing the search.
	walkErr := w.walk(ctx, start, nil, func(p string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || d.Name() == ".git" {
			return nil // directories; symlinks and special files: not followed
		}
		if p != start && a.Glob != "" {
			target := d.Name()
			if strings.Contains(a.Glob, "/") {
				target = p
			}
			if !globName(a.Glob, target) {
				return nil
			}
		}
		return s.file(ctx, p)
	})
	if walkErr != nil {
		return "", fmt.Errorf("searching %s: %w", start, walkErr)
	}
	notes := s.notes()
	if s.matches == 0 {
		msg := fmt.Sprintf("no matches for %q in %s (%d files searched)", a.Pattern, start, s.files)
		if len(notes) > 0 {
			msg += "; " + strings.Join(notes, "; ")
		}
		return msg, nil
	}
	if len(notes) > 0 {
		fmt.Fprintf(&s.out, "(%s)\n", strings.Join(notes, "; "))
	}
	return s.out.String(), nil
}

// search is one search_files call's state.
type search struct {
	w               *workspace
	re              *regexp.Regexp
	out             strings.Builder
	matches, files  int
	binary, tooLong int
	linked          int
	capped          bool
	buf             []byte
}

// file searches the file p; fs.SkipAll ends the search when the output is full.
func (s *search) file(ctx context.Context, p string) error {
	// The checks use the opened file's fstat: the entry may have been swapped for a FIFO
	// or a link since the directory was read.
	f, fi, err := s.w.openNonBlocking(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	switch {
	case !fi.Mode().IsRegular():
		return nil
	case linkCount(fi) > 1:
		s.linked++
		return nil
	case fi.Size() > maxSearchFileSize:
		s.tooLong++
		return nil
	}
	r := bufio.NewReaderSize(&budgetReader{ctx: ctx, r: f, left: maxSearchFileSize}, 32<<10)
	if head, _ := r.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		s.binary++
		return nil
	}
	s.files++
	for n := 1; ; n++ {
		line, _, used, err := readLine(r, maxSearchFileSize, s.buf)
		s.buf = line[:0]
		if used == 0 && err == io.EOF {
			return nil
		}
		if s.re.Match(line) {
			line = bytes.TrimRight(line, "\r")
			text := line
			if len(text) > searchLineBytes {
				text = append(trimPartialRune(text[:searchLineBytes:searchLineBytes]), " …"...)
			}
			entry := fmt.Sprintf("%s:%d: %s\n", p, n, strings.ToValidUTF8(string(text), "\uFFFD"))
			if s.matches >= maxSearchMatches || s.out.Len()+len(entry) > s.w.maxOut {
				s.capped = true
				return fs.SkipAll
			}
			s.out.WriteString(entry)
			s.matches++
		}
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		}
	}
}

// notes say what the search left out.
func (s *search) notes() []string {
	var notes []string
	if s.capped {
		notes = append(notes, fmt.Sprintf("stopped after %d matches; narrow the search with path or glob", s.matches))
	}
	if s.binary > 0 {
		notes = append(notes, fmt.Sprintf("%d binary files skipped", s.binary))
	}
	if s.linked > 0 {
		notes = append(notes, fmt.Sprintf("%d files with more than one hard link skipped", s.linked))
	}
	if s.tooLong > 0 {
		notes = append(notes, fmt.Sprintf("%d files over %d MiB skipped", s.tooLong, maxSearchFileSize>>20))
	}
	return notes
}
