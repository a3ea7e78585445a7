package slack

import (
	"context"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// inbound turns an acknowledged envelope into work; ok is false for envelopes the bot
// ignores or has handled before.
func (c *Channel) inbound(ctx context.Context, it item) (job, bool) {
	switch data := it.data.(type) {
	case slackevents.EventsAPIEvent:
		return c.fromEvent(ctx, data, it.req)
	case slackgo.SlashCommand:
		return c.fromSlash(ctx, data, it.req)
	case slackgo.InteractionCallback:
		return c.fromInteraction(ctx, data, it.req)
	}
	return job{}, false
}

// fromEvent handles an Events API event: a mention of the bot, or a direct message.
func (c *Channel) fromEvent(ctx context.Context, ev slackevents.EventsAPIEvent, req *socketmode.Request) (job, bool) {
	if ev.Type == slackevents.AppRateLimited {
		c.log.Warn("slack stopped sending events for a while: the app exceeded its event rate limit")
		return job{}, false
	}
	p, eventID, ok := c.eventMessage(ev)
	if !ok {
		return job{}, false
	}
	// A retry carries the same event id; a DM that mentions the bot may come as both
	// message.im and app_mention, with different event ids but the same message ts.
	if !c.seen.first("event:"+eventID, messageKey(p.ch, p.ts)) {
		c.log.Debug("slack event received before; skipped", "event", eventID, "retry", req.RetryAttempt)
		c.dropped.Note(channels.InboundDuplicate)
		return job{}, false
	}
	thread := p.thread
	if thread == "" {
		thread = p.ts // a top-level message starts a thread of its own
	}
	at := tsTime(p.ts)
	if at.IsZero() {
		at = time.Now()
	}
	m := core.Message{
		// The message, not the event, is answered once: the engine records this id, so a
		// DM delivered as both message.im and app_mention is answered once, across restarts too.
		ID:        messageKey(p.ch, p.ts),
		Address:   c.address(p.ch, thread),
		Sender:    core.Person{ID: p.user, Name: c.nameOf(ctx, p.user, "")},
		Text:      c.cleanText(p.text),
		Direct:    p.direct,
		Mentioned: true,
		Time:      at,
	}
	if p.thread != "" && p.thread != p.ts {
		m.ReplyTo = p.thread
	}
	if planEditFile(p, m.Text) {
		c.editMessage(ctx, &m, p)
	}
	c.rememberRecent(ctx, p.ch, thread)
	return job{msg: &m}, true
}

// eventMessage is the message an Events API event brings the bot, if it brings one: a
// mention by a person, or a person's direct message, in an allowed conversation. It does
// no I/O, so it can decide before an event is stored whether it is worth storing.
func (c *Channel) eventMessage(ev slackevents.EventsAPIEvent) (p posted, eventID string, ok bool) {
	outer, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return posted{}, "", false
	}
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if in.Edited != nil {
			return posted{}, "", false // an edited mention is not a new request
		}
		p = posted{user: in.User, bot: in.BotID, text: in.Text, ts: in.TimeStamp, thread: in.ThreadTimeStamp, ch: in.Channel,
			direct: strings.HasPrefix(in.Channel, "D"), files: in.Files}
	case *slackevents.MessageEvent:
		var files []slackgo.File
		if in.Message != nil {
			files = in.Message.Files
		}
		if in.ChannelType != "im" && !sharedInThread(in.SubType, in.ThreadTimeStamp, in.TimeStamp, files) {
			return posted{}, "", false // channel chatter arrives as app_mention when it is for the bot
		}
		switch in.SubType {
		case "", "file_share", "thread_broadcast":
		default:
			return posted{}, "", false // edits, deletions, joins, bot posts
		}
		p = posted{user: in.User, bot: in.BotID, text: in.Text, ts: in.TimeStamp, thread: in.ThreadTimeStamp, ch: in.Channel,
			direct: in.ChannelType == "im", files: files}
	default:
		return posted{}, "", false
	}
	if p.user == "" || p.bot != "" || p.user == c.botUser || p.ts == "" {
		return posted{}, "", false // bots, including this one
	}
	if !c.allowedChannel(p.ch) {
		c.log.Debug("ignoring a conversation that is not allowed", "slack_channel", p.ch)
		return posted{}, "", false
	}
	return p, outer.EventID, true
}

// messageKey names a Slack message: a channel and a ts identify it.
func messageKey(ch, ts string) string { return "msg:" + ch + ":" + ts }

// posted is what the two event kinds have in common.
type posted struct {
	user, bot, text, ts, thread, ch string
	direct                          bool
	files                           []slackgo.File // shared with the message (an edited plan file)
}

// cleanText turns Slack's message text into what the person typed: the leading mention of
// the bot dropped (so "@bot /plan status" is the command it looks like) and Slack's
// escaping of &, < and > undone. Other mentions and links keep Slack's <…> form.
func (c *Channel) cleanText(s string) string {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "<@"+c.botUser+">"); ok {
		s = strings.TrimSpace(rest)
	} else if rest, ok := strings.CutPrefix(s, "<@"+c.botUser+"|"); ok {
		if _, after, ok := strings.Cut(rest, ">"); ok {
			s = strings.TrimSpace(after)
		}
	}
	return unescape(s)
}

// unescape undoes Slack's escaping of message text.
func unescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// rememberRecent saves thread as the most recent session of channel ch, for a /plan typed
// at the channel's top level. It writes only when that changes, and lazily: an OS crash
// loses only the hint, and a durable save would be one more fsync per mention.
func (c *Channel) rememberRecent(ctx context.Context, ch, thread string) {
	c.recentMu.Lock()
	defer c.recentMu.Unlock()
	if c.recent[ch] == thread {
		return
	}
	if err := c.st.SetChannelStateLazy(ctx, Name, c.team, recentKey(ch), thread); err != nil {
		c.log.Error("saving the channel's most recent session", "slack_channel", ch, "err", err)
		return
	}
	if len(c.recent) > 4096 {
		clear(c.recent) // only a cache of what is saved
	}
	c.recent[ch] = thread
}

// recentSession is the thread of channel ch's most recent session; "" if none.
func (c *Channel) recentSession(ctx context.Context, ch string) string {
	c.recentMu.Lock()
	defer c.recentMu.Unlock()
	if t, ok := c.recent[ch]; ok {
		return t
	}
	v, ok, err := c.st.ChannelState(ctx, Name, c.team, recentKey(ch))
	if err != nil {
		c.log.Error("loading the channel's most recent session", "slack_channel", ch, "err", err)
		return ""
	}
	if ok {
		c.recent[ch] = v
	}
	return v
}

func recentKey(ch string) string { return "recent:" + ch }
