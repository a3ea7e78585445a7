package channels

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/plangate/plangate/core"
)

// Helpers the platform adapters (telegram, slack, discord) share.

// OrDiscard is log, or a logger that discards when log is nil.
func OrDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// AllowList is a set of conversation ids the bot answers in; an empty one allows all.
type AllowList[K comparable] map[K]bool

// NewAllowList is the set of ids.
func NewAllowList[K comparable](ids []K) AllowList[K] {
	a := make(AllowList[K], len(ids))
	for _, id := range ids {
		a[id] = true
	}
	return a
}

// Allows reports whether id may be answered in.
func (a AllowList[K]) Allows(id K) bool { return len(a) == 0 || a[id] }

// LongReply reports whether r goes as a reply.md file under long_reply_as_file limit
// (0 = never); progress, edited in place, never does.
func LongReply(limit int, r core.Reply) bool {
	return limit > 0 && r.Kind != core.ReplyProgress && utf8.RuneCountInString(r.Text) > limit
}

// ReplyFile is a long reply as the file it is sent as.
func ReplyFile(md string) core.File {
	return core.File{Name: "reply.md", MIME: "text/markdown", Data: []byte(md)}
}

// Attachment returns the name and bytes an attachment is uploaded with: its data, else
// the file at its path; its name, else the path's base name, else "attachment".
func Attachment(f core.File) (name string, data []byte, err error) {
	data = f.Data
	if data == nil && f.Path != "" {
		if data, err = os.ReadFile(f.Path); err != nil {
			return "", nil, fmt.Errorf("reading attachment: %w", err)
		}
	}
	name = f.Name
	if name == "" && f.Path != "" {
		name = filepath.Base(f.Path)
	}
	if name == "" {
		name = "attachment"
	}
	return name, data, nil
}

// Clip shortens s to at most n characters, marking the cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max(n-1, 0)])) + "…"
}

// FirstLine is the first line of a reply, as plain text: what a short answer (a toast, a
// modal's note) shows of it.
func FirstLine(md string) string {
	head, _, _ := strings.Cut(strings.TrimSpace(PlainText(md)), "\n")
	return head
}

// decisions are the decision buttons, in the order DecisionKind tries their tags.
var decisions = [...]core.ActionKind{core.ActionAccept, core.ActionRevise, core.ActionAuto, core.ActionUndo}

// DecisionTag is the one-letter tag of a decision button in telegram's callback_data and
// discord's custom_id ("a" accept, "r" revise, "u" auto, "n" the report's undo); "" for
// any other action.
func DecisionTag(k core.ActionKind) string {
	switch k {
	case core.ActionUndo:
		return "n"
	case core.ActionAccept:
		return "a"
	case core.ActionRevise:
		return "r"
	case core.ActionAuto:
		return "u"
	}
	return ""
}

// DecisionKind is the decision button a tag names.
func DecisionKind(tag string) (core.ActionKind, bool) {
	for _, k := range decisions {
		if DecisionTag(k) == tag {
			return k, true
		}
	}
	return "", false
}
