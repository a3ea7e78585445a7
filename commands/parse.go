package commands

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// prefix is the command word. It is matched case-insensitively.
const prefix = "/plan"

// Parse reads one chat message. Text that is not a /plan command, or a /plan@Other addressed
// to another bot, is NotCommand. A well-formed command is IsCommand with Cmd filled in
// (Cmd.Spec is its table row); anything else that starts with /plan is IsUsage, with a short
// markdown reply naming the form that would work.
//
// botName is this bot's user name (Telegram's "/plan@name"); "" accepts any @name.
func Parse(text, botName string) Result {
	s := strings.TrimFunc(text, isSpace)
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return Result{}
	}
	rest := s[len(prefix):]
	switch {
	case rest == "":
	case rest[0] == '@':
		addressee, after := cutWord(rest[1:])
		if addressee == "" {
			return Result{}
		}
		if want := strings.TrimPrefix(botName, "@"); want != "" && !strings.EqualFold(addressee, want) {
			return Result{} // a command for another bot in the same group
		}
		rest = after
	default:
		if r, _ := utf8.DecodeRuneInString(rest); !isSpace(r) {
			return Result{} // "/planner", "/plan/x"
		}
	}

	word, args := cutWord(strings.TrimFunc(rest, isSpace))
	if word == "" {
		spec, _ := Lookup(Status)
		return Result{Kind: IsCommand, Cmd: Command{Name: Status, Spec: spec}}
	}
	spec, ok := Lookup(Name(strings.ToLower(word)))
	if !ok {
		return usageResult(Command{}, unknownReply(word))
	}
	return parseArgs(spec, args)
}

// parseArgs checks args against the row's synopsis and the subcommand's own grammar.
func parseArgs(spec Spec, args string) Result {
	cmd := Command{Name: spec.Name, Args: args, Spec: spec}
	switch {
	case spec.Args == "" && args != "":
		return usageResult(cmd, fmt.Sprintf("`/plan %s` takes no arguments: %s", spec.Name, usage(spec)))
	case spec.ArgRequired && args == "":
		return usageResult(cmd, fmt.Sprintf("`/plan %s` needs %s: %s", spec.Name, argNoun(spec), usage(spec)))
	}

	switch spec.Name {
	case Accept:
		var rest []string
		for _, w := range strings.FieldsFunc(args, isSpace) {
			if strings.EqualFold(w, "--stale") {
				cmd.Stale = true
				continue
			}
			rest = append(rest, w)
		}
		if len(rest) == 0 {
			break
		}
		if len(rest) > 1 {
			return usageResult(cmd, fmt.Sprintf("`/plan accept` takes an optional plan version like v2 and --stale (%s is more): %s", quote(strings.Join(rest, " ")), usage(spec)))
		}
		v, reply := parseVersion(rest[0])
		if reply != "" {
			return usageResult(cmd, fmt.Sprintf("`/plan accept` takes an optional plan version like v2 and --stale (%s): %s", reply, usage(spec)))
		}
		cmd.Version = v
	case Auto:
		switch strings.ToLower(args) {
		case "", "on":
			cmd.Auto = AutoOn
		case "off":
			cmd.Auto = AutoOff
		default:
			return usageResult(cmd, fmt.Sprintf("`/plan auto` takes on, off or nothing: %s", usage(spec)))
		}
	case Nudge:
		req, reply := parseNudge(args)
		if reply != "" {
			return usageResult(cmd, reply+"\nUsage: "+usage(spec)+nudgeExamples)
		}
		cmd.Nudge = &req
	case Revise:
		return parseRevise(cmd)
	}
	return Result{Kind: IsCommand, Cmd: cmd}
}

// parseVersion reads "v3", "V3" or "3". The reason is non-empty when args is not a version.
func parseVersion(args string) (int, string) {
	digits := strings.TrimPrefix(strings.TrimPrefix(args, "v"), "V")
	if digits == "" || strings.TrimFunc(digits, isDigit) != "" {
		return 0, fmt.Sprintf("%s is not one", quote(args))
	}
	v, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Sprintf("%s is too large", quote(args))
	}
	if v < 1 {
		return 0, "plan versions start at v1"
	}
	return v, ""
}

// unknownReply answers a subcommand that is not in the table.
func unknownReply(word string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unknown subcommand %s.", quote(word))
	if sugg := suggest(word, names()); len(sugg) > 0 {
		b.WriteString(" Did you mean " + orList(sugg, "/plan ") + "?")
	}
	b.WriteString("\n" + subcommandList())
	return b.String()
}

func usageResult(cmd Command, reply string) Result {
	return Result{Kind: IsUsage, Cmd: cmd, Reply: reply}
}

// cutWord splits s at its first run of white space; rest is trimmed and keeps inner newlines.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, isSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimFunc(s[i:], isSpace)
}

// isSpace also treats a byte-order mark and zero-width space as blank, since some clients
// paste them around commands and they are invisible to the person typing.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r == '\ufeff' || r == '\u200b'
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// quote shows user text inside a reply: double-quoted with control characters escaped, and
// cut short so a pasted essay does not come back as a wall of text.
func quote(s string) string {
	const maxRunes = 40
	if utf8.RuneCountInString(s) > maxRunes {
		s = string([]rune(s)[:maxRunes]) + "…"
	}
	return strconv.Quote(s)
}

// orList joins items as "a", "a or b", "a, b or c", each with prefix p.
func orList(items []string, p string) string {
	var b strings.Builder
	for i, it := range items {
		switch {
		case i == 0:
		case i == len(items)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(p + it)
	}
	return b.String()
}
