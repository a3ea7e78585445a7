package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// The session page's audit timeline: one sentence per audit row ("alice accepted v2"),
// never the stored detail as it is (a tool row's detail is JSON).

// toolRow is what a sentence needs of a tool_blocked or tool_ran row's JSON detail.
type toolRow struct {
	Tool       string `json:"tool"`
	Call       string `json:"call"`
	Outcome    string `json:"outcome"`
	Why        string `json:"why"`
	DurationMS *int64 `json:"duration_ms"`
}

// The gate's audit kinds (core/engine names them; the web channel only reads them).
const (
	eventToolBlocked core.EventKind = "tool_blocked"
	eventToolRan     core.EventKind = "tool_ran"
)

// timelineEntry is one line of the timeline.
type timelineEntry struct {
	At       time.Time
	Sentence string
}

// timeline turns audit rows into sentences, oldest first as stored.
func timeline(evs []core.Event) []timelineEntry {
	out := make([]timelineEntry, 0, len(evs))
	for _, ev := range evs {
		out = append(out, timelineEntry{At: ev.At, Sentence: sentence(ev)})
	}
	return out
}

// sentence is one audit row in words, e.g. "alice accepted v2." or "The agent ran
// write_file on README.md (12 ms).". A person's name starts it as it is spelled.
func sentence(ev core.Event) string {
	who := actorWords(ev.Actor, ev.Channel)
	v := ""
	if ev.PlanVersion > 0 {
		v = fmt.Sprintf("v%d", ev.PlanVersion)
	}
	d := machine.OneLine(ev.Detail)
	quoted := func(prefix string) string {
		if d == "" {
			return ""
		}
		return prefix + "“" + d + "”"
	}
	var s string
	switch ev.Kind {
	case core.EventEntered:
		s = who + " turned plan mode on"
	case core.EventExited:
		s = who + " turned plan mode off"
	case core.EventProposed:
		s = who + " proposed " + v + quoted(": ")
	case core.EventSuperseded:
		s = "Plan " + v + " was superseded"
		if strings.HasPrefix(d, "by ") {
			s += " " + d
		}
	case core.EventAccepted:
		s = who + " accepted " + v
	case core.EventAutoAccepted:
		s = who + " accepted " + v + quoted(" (") + closeParen(d)
	case core.EventApprovalRecorded:
		s = who + " approved " + v + quoted(" (") + closeParen(d)
	case core.EventAutoChanged:
		s = who + " turned " + strings.TrimPrefix(d, "by ")
	case core.EventRevised:
		s = who + " sent " + v + " back for revision" + quoted(": ")
	case core.EventAsked:
		s = who + " asked" + quoted(": ")
	case core.EventAnswered:
		s = who + " answered" + quoted(": ")
	case core.EventExpired:
		s = "Plan " + v + " expired" + quoted(" (") + closeParen(d)
	case core.EventAbandoned:
		s = who + " abandoned " + v
	case core.EventAborted:
		s = who + " stopped " + v
	case core.EventStepUpdated:
		s = who + " updated the steps of " + v + quoted(": ")
	case core.EventCompleted:
		s = "Plan " + v + " was completed"
	case core.EventNudged:
		s = "plangate sent a reminder"
		if v != "" {
			s += " about " + v
		}
	case core.EventRefused:
		s = "plangate refused a request" + quoted(": ")
	case core.EventNudgeSet:
		s = who + " changed the reminders" + quoted(": ")
	case core.EventStopped:
		s = "Plan " + v + " stopped" + stopDetail(d)
	case core.EventVerification:
		s = "plangate checked " + v + quoted(": ")
	case core.EventEscalated:
		s = "plangate told others about " + v + quoted(": ")
	case eventToolBlocked, eventToolRan:
		s = toolSentence(who, ev)
	default:
		s = who + ": " + strings.ReplaceAll(string(ev.Kind), "_", " ")
		if v != "" {
			s += " " + v
		}
		s += quoted(": ")
	}
	s = strings.Join(strings.Fields(s), " ")
	return s + "."
}

func closeParen(d string) string {
	if d == "" {
		return ""
	}
	return ")"
}

// stopDetail is a stop row's "kind: notice" as words.
func stopDetail(d string) string {
	kind, notice, ok := strings.Cut(d, ": ")
	if !ok {
		if d == "" {
			return ""
		}
		return ": " + d
	}
	return ": " + plan.StopWords(plan.StopKind(kind)) + " — " + notice
}

// toolSentence is a gate row: which call, and how it ended.
func toolSentence(who string, ev core.Event) string {
	var r toolRow
	if err := json.Unmarshal([]byte(ev.Detail), &r); err != nil || r.Tool == "" {
		return who + " called a tool"
	}
	call := r.Call
	if call == "" {
		call = r.Tool
	}
	if ev.Kind == eventToolBlocked {
		s := who + " was not allowed to call " + call
		if r.Why != "" {
			s += ": " + machine.OneLine(r.Why)
		}
		return s
	}
	s := who + " ran " + call
	switch {
	case r.Outcome == "failed":
		s += ", which failed"
		if r.Why != "" {
			s += ": " + machine.OneLine(r.Why)
		}
	case r.DurationMS != nil:
		s += fmt.Sprintf(" (%d ms)", *r.DurationMS)
	}
	if ev.PlanVersion > 0 {
		s += fmt.Sprintf(", under v%d", ev.PlanVersion)
	}
	return s
}
