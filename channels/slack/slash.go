package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// fromSlash handles the /plan slash command: in a thread (where Slack says which) for that
// thread's session, at a channel's top level for its most recent session, which an
// ephemeral note names; /plan on <goal> there starts a new thread. With no session yet,
// the note says how to start one.
func (c *Channel) fromSlash(ctx context.Context, cmd slackgo.SlashCommand, req *socketmode.Request) (job, bool) {
	ch, user := cmd.ChannelID, cmd.UserID
	if ch == "" || user == "" {
		return job{}, false
	}
	id := cmp.Or(cmd.TriggerID, "slash:"+req.EnvelopeID)
	if !c.seen.first("slash:" + id) {
		return job{}, false
	}
	thread := slashThread(req.Payload)
	typedIn := thread // where the person is looking: a refusal is shown there
	if !c.allowedChannel(ch) {
		return c.say(ch, typedIn, user, noteNotHere), true
	}
	text := "/plan"
	if args := strings.TrimSpace(unescape(cmd.Text)); args != "" {
		text += " " + args
	}
	sender := core.Person{ID: user, Name: c.nameOf(ctx, user, cmd.UserName)}
	parsed := commands.Parse(text, "")
	var after func(ctx context.Context)
	switch {
	case thread != "":
		c.rememberRecent(ctx, ch, thread)
	case parsed.Kind == commands.IsCommand && parsed.Cmd.Name == commands.On:
		root, err := c.startThread(ctx, ch, sender, parsed.Cmd.Args)
		if err != nil {
			return c.say(ch, typedIn, user, noteNoThread), true
		}
		thread = root
		c.rememberRecent(ctx, ch, thread)
	default:
		thread = c.recentSession(ctx, ch)
		if thread == "" {
			note := "There is no plangate session in this conversation yet. Mention the bot with a task, or start one with `/plan on <goal>`."
			if parsed.Kind == commands.IsCommand && parsed.Cmd.Name == commands.Help {
				note = commands.HelpText() + "\n\n" + note
			}
			return c.say(ch, typedIn, user, note), true
		}
		note := fmt.Sprintf("`%s` went to the most recent plangate session here: %s. The answer is in that thread.", channels.Clip(text, 100), c.threadRef(ch, thread))
		after = func(ctx context.Context) { c.ephemeral(ctx, ch, "", user, note) }
	}
	m := c.asked(id, ch, thread, typedIn, sender, time.Now()) // a slash command carries no time of its own
	m.Text = text
	return job{msg: m, after: after}, true
}

// slashThread reads the thread_ts of a slash command payload, which Slack includes only
// where it lets commands run inside threads (the library's type has no field for it).
func slashThread(payload json.RawMessage) string {
	var p struct {
		ThreadTS string `json:"thread_ts"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	return p.ThreadTS
}

// startThread posts the top-level message whose thread holds a session started with
// /plan on at a channel's top level, and returns its ts.
func (c *Channel) startThread(ctx context.Context, ch string, who core.Person, goal string) (string, error) {
	text := "*Plan mode* — started by " + escapeMrkdwn(who.Name) + " with `/plan on`"
	if goal = strings.TrimSpace(goal); goal != "" {
		text += ":\n" + quoteMrkdwn(channels.Clip(goal, 2000))
	}
	ts, err := c.post(ctx, ch, "", firstLine(text), []slackgo.Block{slackgo.NewSectionBlock(mrkdwn(text), nil, nil)})
	if err != nil {
		return "", fmt.Errorf("starting a thread in %s: %w", ch, err)
	}
	return ts, nil
}

// threadRef names a thread for a note: a link where the workspace URL is known.
func (c *Channel) threadRef(ch, ts string) string {
	label := "the thread"
	if t := tsTime(ts); !t.IsZero() {
		label = "the thread started " + t.UTC().Format("2006-01-02 15:04 MST")
	}
	if link := c.threadLink(ch, ts); link != "" {
		return "<" + link + "|" + label + ">"
	}
	return label
}

// interactions remembers the clicks, modal submissions and slash commands whose outcome
// is not known yet, so the engine's first reply to one (Reply.InReplyTo) can be shown
// only to its author.
type interactions struct{ m sync.Map } // id -> asker

// asker is where and to whom the answer to an interaction goes.
type asker struct {
	ch, thread, user string
}

func newInteractions() *interactions { return &interactions{} }

// expect registers an interaction; call it before the message is queued.
func (w *interactions) expect(id, ch, thread, user string) {
	w.m.Store(id, asker{ch: ch, thread: thread, user: user})
}

// take returns the interaction a reply answers, once: only the first reply to an
// interaction is its outcome.
func (w *interactions) take(id string) (asker, bool) {
	if id == "" {
		return asker{}, false
	}
	v, ok := w.m.LoadAndDelete(id)
	a, _ := v.(asker)
	return a, ok
}

// forget drops an interaction that is handled.
func (w *interactions) forget(id string) { w.m.Delete(id) }
