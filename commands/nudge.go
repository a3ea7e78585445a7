package commands

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// nudgeExamples follows every /plan nudge usage reply. The cron example is a code span so
// no platform's markdown reads its asterisks as emphasis.
const nudgeExamples = "\ne.g. `/plan nudge every 2h` · `/plan nudge snooze 30m` · `/plan nudge \"0 9 * * 1-5\"`"

// minNudge is the shortest duration accepted: tests and demos use seconds, and anything
// shorter would only flood the chat.
const minNudge = time.Second

// nudgeKeywords are the words /plan nudge understands besides a cron spec, for suggestions.
func nudgeKeywords() []string {
	return []string{string(NudgeModeOff), string(NudgeModeSnooze), string(NudgeModeEvery)}
}

// parseNudge reads the argument of /plan nudge. The reply is non-empty when args is invalid;
// it says why, and the caller appends the usage line.
func parseNudge(args string) (NudgeRequest, string) {
	if args == "" {
		return NudgeRequest{}, "`/plan nudge` needs off, snooze <duration>, every <duration> or a cron spec."
	}
	word, rest := cutWord(args)
	switch kw := NudgeMode(strings.ToLower(word)); kw {
	case NudgeModeOff:
		if rest != "" {
			return NudgeRequest{}, "`/plan nudge off` takes nothing more."
		}
		return NudgeRequest{Mode: NudgeModeOff}, ""
	case NudgeModeSnooze, NudgeModeEvery:
		if rest == "" {
			return NudgeRequest{}, fmt.Sprintf("`/plan nudge %s` needs a duration, like 2h or 30m.", kw)
		}
		d, reason := nudgeDuration(rest)
		if reason != "" {
			return NudgeRequest{}, fmt.Sprintf("`/plan nudge %s`: %s.", kw, reason)
		}
		return NudgeRequest{Mode: kw, Duration: d}, ""
	}

	// A bare duration ("/plan nudge 2h") means every.
	if d, err := parseDuration(args); err == nil {
		if d < minNudge {
			return NudgeRequest{}, fmt.Sprintf("`/plan nudge`: %s is shorter than %s.", quote(args), minNudge)
		}
		return NudgeRequest{Mode: NudgeModeEvery, Duration: d}, ""
	}

	spec, err := normalizeCron(unquote(args))
	if err != nil {
		return NudgeRequest{}, cronReply(args, err.Error())
	}
	return NudgeRequest{Mode: NudgeModeCron, Spec: spec, Text: args}, ""
}

// cronReply says why the cron spec args was refused (the caller appends the usage line).
func cronReply(args, reason string) string {
	reply := fmt.Sprintf("`/plan nudge`: %s is not a valid cron spec (%s).", quote(unquote(args)), clip(reason, 160))
	// Only a word can be a misspelt keyword; "@every" or "0" is a cron spec gone wrong.
	word, _ := cutWord(args)
	if sugg := suggest(word, nudgeKeywords()); len(sugg) > 0 && isWord(word) {
		reply += " Did you mean " + orList(sugg, "/plan nudge ") + "?"
	}
	return reply
}

// CronRefusal is the usage reply for a cron request whose spec the scheduler refused, with
// its reason: the same reply a spec the parser itself refuses gets.
func (r NudgeRequest) CronRefusal(reason string) string {
	spec, _ := Lookup(Nudge)
	return cronReply(r.Text, reason) + "\nUsage: " + usage(spec) + nudgeExamples
}

// nudgeDuration parses a snooze or every duration; the reason is non-empty when s is refused.
func nudgeDuration(s string) (time.Duration, string) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Sprintf("%s is not a duration; try 2h, 30m or 1h30m", quote(s))
	}
	if d < minNudge {
		return 0, fmt.Sprintf("%s is shorter than %s", quote(s), minNudge)
	}
	return d, ""
}

// parseDuration accepts Go durations ("1h30m", "90s") and the forms people type in chat:
// "2 hours", "1d", "1 day 2h", "45 min". Days and weeks are fixed 24h and 168h.
func parseDuration(s string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimFunc(unquote(s), isSpace))
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var total float64
	for rest := s; rest != ""; {
		rest = strings.TrimLeftFunc(rest, func(r rune) bool { return isSpace(r) || r == ',' })
		if rest == "" {
			break
		}
		n := strings.IndexFunc(rest, func(r rune) bool { return !isDigit(r) && r != '.' })
		if n <= 0 {
			return 0, fmt.Errorf("expected a number at %q", rest)
		}
		v, err := strconv.ParseFloat(rest[:n], 64)
		if err != nil {
			return 0, fmt.Errorf("reading %q: %w", rest[:n], err)
		}
		rest = strings.TrimLeftFunc(rest[n:], isSpace)
		u := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) })
		if u < 0 {
			u = len(rest)
		}
		unit, ok := durationUnit(rest[:u])
		if !ok {
			return 0, fmt.Errorf("unknown unit %q", rest[:u])
		}
		rest = rest[u:]
		total += v * float64(unit)
		if total >= math.MaxInt64 {
			return 0, errors.New("duration too long")
		}
	}
	return time.Duration(total), nil
}

func durationUnit(u string) (time.Duration, bool) {
	switch u {
	case "ms", "msec", "millisecond", "milliseconds":
		return time.Millisecond, true
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "m", "min", "mins", "minute", "minutes":
		return time.Minute, true
	case "h", "hr", "hrs", "hour", "hours":
		return time.Hour, true
	case "d", "day", "days":
		return 24 * time.Hour, true
	case "w", "wk", "wks", "week", "weeks":
		return 7 * 24 * time.Hour, true
	}
	return 0, false
}

// normalizeCron reads a 5-field spec or a descriptor (@daily, @every 2h), with an optional
// CRON_TZ= or TZ= prefix, and returns it with white space collapsed to single spaces and
// the prefix upper-cased: the cron parser misreads a prefix followed by a tab. Only the
// text is checked here; whether it is a schedule is the nudges package's call.
func normalizeCron(s string) (string, error) {
	fields := strings.FieldsFunc(s, isSpace)
	if len(fields) == 0 {
		return "", errors.New("empty spec")
	}
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if len(fields[0]) >= len(p) && strings.EqualFold(fields[0][:len(p)], p) {
			fields[0] = p + fields[0][len(p):]
			if len(fields) == 1 {
				return "", fmt.Errorf("%s needs a schedule after the time zone", p)
			}
			break
		}
	}
	return strings.Join(fields, " "), nil
}

// unquote removes one pair of surrounding quotes, including the typographic ones that phone
// keyboards and some chat clients substitute for straight quotes.
func unquote(s string) string {
	s = strings.TrimFunc(s, isSpace)
	pairs := [][2]string{{`"`, `"`}, {`'`, `'`}, {"`", "`"}, {"“", "”"}, {"‘", "’"}, {"„", "“"}, {"«", "»"}}
	for _, p := range pairs {
		if len(s) >= len(p[0])+len(p[1]) && strings.HasPrefix(s, p[0]) && strings.HasSuffix(s, p[1]) {
			return strings.TrimFunc(s[len(p[0]):len(s)-len(p[1])], isSpace)
		}
	}
	return s
}

func isWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
}

// clip shortens a parser message so a reply stays one line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
