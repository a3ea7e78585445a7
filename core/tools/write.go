package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
)

// writeTarget cleans the path of a write_file or edit_file call and refuses what no plan
// scope should allow: the workspace root itself, and .git, whose hooks and config would
// run commands on the user's next git call. WritePaths uses it too, so such a call is a
// plain tool error rather than a scope violation that stops the turn.
func writeTarget(tool, p string) (string, error) {
	rel, err := cleanPath(p, false)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", fmt.Errorf("%s needs a file path, not the workspace root", tool)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".git" {
			return "", fmt.Errorf("%s refuses paths inside .git (%s): git's hooks and config could run commands", tool, rel)
		}
	}
	return rel, nil
}

// writeFile creates or replaces a file, creating its parent directories.
func (w *workspace) writeFile(a writeArgs) (string, error) {
	rel, err := writeTarget(ToolWriteFile, a.Path)
	if err != nil {
		return "", err
	}
	if a.Content == nil {
		return "", errors.New(`content is required: the complete new file content ("" for an empty file)`)
	}
	data := []byte(*a.Content)
	if len(data) > w.maxWrite {
		return "", fmt.Errorf("content is %d bytes; write_file writes at most %d bytes (tools.max_write_bytes): split the content into smaller files", len(data), w.maxWrite)
	}
	if err := w.refuseHidden(rel); err != nil {
		return "", err
	}
	if err := w.refusePlanCopy(rel); err != nil {
		return "", err
	}
	if err := w.refuseSymlinks(ToolWriteFile, rel); err != nil {
		return "", err
	}
	verb, perm := "created", fs.FileMode(0o644)
	if fi, err := w.root.Lstat(rel); err == nil {
		switch {
		case fi.IsDir():
			return "", fmt.Errorf("%s is a directory; write_file writes files", rel)
		case !fi.Mode().IsRegular():
			return "", fmt.Errorf("%s is not a regular file (it is %s); write_file replaces regular files only", rel, fileKind(fi.Mode()))
		}
		verb, perm = "overwrote", fi.Mode().Perm()
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", fsError(dir, err)
		}
	}
	if err := replaceFile(w.root, rel, data, perm); err != nil {
		return "", err
	}
	lines := countLines(data)
	unit := "lines"
	if lines == 1 {
		unit = "line"
	}
	return fmt.Sprintf("%s %s (%d bytes, %d %s)", verb, rel, len(data), lines, unit), nil
}

// editFile replaces the single occurrence of old with new.
func (w *workspace) editFile(ctx context.Context, a editArgs) (string, error) {
	rel, err := writeTarget(ToolEditFile, a.Path)
	if err != nil {
		return "", err
	}
	if a.Old == nil || a.New == nil {
		return "", errors.New(`old and new are both required: the exact text to replace and its replacement ("" deletes it)`)
	}
	old, repl := *a.Old, *a.New
	if old == "" {
		return "", errors.New("old must not be empty: give the exact text to replace (use write_file to create or replace a whole file)")
	}
	if old == repl {
		return "", errors.New("old and new are the same: nothing would change")
	}
	if err := w.refuseHidden(rel); err != nil {
		return "", err
	}
	if err := w.refusePlanCopy(rel); err != nil {
		return "", err
	}
	if err := w.refuseSymlinks(ToolEditFile, rel); err != nil {
		return "", err
	}
	data, fi, err := w.readRegular(ctx, ToolEditFile, rel, w.maxWrite)
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file; edit_file edits text files only", rel)
	}
	content := string(data)
	switch n := strings.Count(content, old); n {
	case 0:
		return "", fmt.Errorf("old text not found in %s; %s", rel, notFoundHint(content, old))
	case 1:
	default:
		return "", fmt.Errorf("old text found %d times in %s (lines %s); include more surrounding lines so it matches exactly once",
			n, rel, occurrenceLines(content, old, 5))
	}
	i := strings.Index(content, old)
	updated := content[:i] + repl + content[i+len(old):]
	if len(updated) > w.maxWrite {
		return "", fmt.Errorf("the edited %s would be %d bytes; edit_file writes at most %d bytes (tools.max_write_bytes)", rel, len(updated), w.maxWrite)
	}
	if err := w.refuseSecret(rel, content, updated, i, len(old), len(repl)); err != nil {
		return "", err
	}
	if err := replaceFile(w.root, rel, []byte(updated), fi.Mode().Perm()); err != nil {
		return "", err
	}
	line := strings.Count(content[:i], "\n") + 1
	if repl == "" {
		return fmt.Sprintf("edited %s: removed %s", rel, lineSpan(line, old)), nil
	}
	return fmt.Sprintf("edited %s: replaced %s with %s", rel, lineSpan(line, old), lineSpan(line, repl)), nil
}

// notFoundHint guesses why an edit did not match, from the mistakes models usually make.
func notFoundHint(content, old string) string {
	switch {
	case strings.Contains(content, "\r\n") && strings.Contains(content, strings.ReplaceAll(old, "\n", "\r\n")):
		return `the file uses CRLF line endings: write each line break in old as \r\n`
	case looksNumbered(old):
		return "old seems to include read_file's line numbers; leave them out and copy only the text"
	case strings.TrimSpace(old) != "" && strings.Contains(content, strings.TrimSpace(old)):
		return "it matches when leading and trailing whitespace is ignored: copy the exact indentation and line breaks"
	}
	return "read_file it again and copy the text exactly, including whitespace"
}

// looksNumbered reports whether text starts like read_file output ("     3\t...").
func looksNumbered(text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	num, _, ok := strings.Cut(strings.TrimLeft(first, " "), "\t")
	if !ok || num == "" {
		return false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// occurrenceLines lists the line numbers where old starts, at most limit of them.
func occurrenceLines(content, old string, limit int) string {
	var lines []string
	off := 0
	for len(lines) < limit {
		i := strings.Index(content[off:], old)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(strings.Count(content[:off+i], "\n")+1))
		off += i + len(old)
	}
	if strings.Count(content, old) > limit {
		lines = append(lines, "…")
	}
	return strings.Join(lines, ", ")
}

// lineSpan names the lines text covers when it starts on line start; a final newline
// ends the last line rather than starting another.
func lineSpan(start int, text string) string {
	breaks := strings.Count(strings.TrimSuffix(text, "\n"), "\n")
	if breaks == 0 {
		return fmt.Sprintf("line %d", start)
	}
	return fmt.Sprintf("lines %d-%d", start, start+breaks)
}

func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// secretContext is how many lines around an edit are scanned with it: a secret the edit
// completes with its neighbours is found, a file's far-away lines cost nothing.
const secretContext = 3

// refuseSecret refuses an edit (old text of oldLen bytes at i in before, replaced by
// newLen bytes in after) that makes a secret appear: the edited lines and their
// neighbours are scanned, and a secret they held before the edit does not count.
func (w *workspace) refuseSecret(rel, before, after string, i, oldLen, newLen int) error {
	if w.secrets == nil {
		return nil
	}
	was, _ := around(before, i, i+oldLen)
	now, first := around(after, i, i+newLen)
	old := w.secrets.Scan(was)
	var found []core.Secret
	for _, s := range w.secrets.Scan(now) {
		if slices.ContainsFunc(old, func(o core.Secret) bool { return o.Rule == s.Rule && o.Text == s.Text }) {
			continue
		}
		s.Line += first - 1
		s.EndLine += first - 1
		found = append(found, s)
	}
	if len(found) == 0 {
		return nil
	}
	return &core.SecretWrite{What: ToolEditFile + " on " + rel, Found: core.SecretsList(found)}
}

// around is text's lines from secretContext lines before the one holding byte from to
// secretContext lines after the one holding byte to, and the 1-based number of its first.
func around(text string, from, to int) (string, int) {
	lines := strings.SplitAfter(text, "\n")
	lo := max(strings.Count(text[:from], "\n")-secretContext, 0)
	hi := min(strings.Count(text[:to], "\n")+secretContext+1, len(lines))
	return strings.Join(lines[lo:hi], ""), lo + 1
}
