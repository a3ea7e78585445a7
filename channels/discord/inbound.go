package discord

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// fromMessage normalizes a MESSAGE_CREATE, or reports false when the bot should not react:
// bots, channels that are not allowed, and guild chatter that neither mentions the bot,
// replies to it nor is a typed /plan command.
func (c *Channel) fromMessage(ctx context.Context, m *discordgo.Message) (core.Message, bool) {
	if m == nil || m.Author == nil || m.Author.ID == c.botID || m.Author.Bot {
		return core.Message{}, false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return core.Message{}, false // joins, pins, thread announcements
	}
	direct := m.GuildID == ""
	mentioned := false
	for _, u := range m.Mentions {
		if u != nil && u.ID == c.botID {
			mentioned = true
		}
	}
	text := c.stripMention(m.Content)
	replyToBot := m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == c.botID
	if isPlanEdit(m, text, replyToBot) {
		text = channels.EditCommand(text, "")
	}
	isCommand := commands.Parse(text, "").Kind != commands.NotCommand
	if !direct && !mentioned && !replyToBot && !isCommand {
		return core.Message{}, false
	}
	if strings.TrimSpace(text) == "" {
		// Only a mention, or a guild message whose content the missing message-content
		// intent withheld: nothing to act on.
		c.log.Debug("ignoring a message without text", "chat", m.ChannelID)
		return core.Message{}, false
	}
	addr := c.address(ctx, m.GuildID, m.ChannelID)
	if !c.allowedChannel(addr) {
		c.log.Debug("ignoring a channel that is not allowed", "chat", m.ChannelID)
		return core.Message{}, false
	}
	msg := core.Message{
		ID:        m.ID,
		Address:   addr,
		Sender:    person(m.Author, m.Member),
		Text:      text,
		Direct:    direct,
		Mentioned: mentioned || replyToBot || direct,
		Time:      m.Timestamp,
	}
	if msg.Time.IsZero() {
		msg.Time = snowflakeTime(m.ID)
	}
	if m.MessageReference != nil {
		msg.ReplyTo = m.MessageReference.MessageID
	}
	return msg, true
}

// stripMention removes a leading mention of the bot, so "@bot /plan status" is the command
// it looks like; mentions of the bot further on become its name.
func (c *Channel) stripMention(s string) string {
	s = strings.TrimSpace(s)
	for _, m := range []string{"<@" + c.botID + ">", "<@!" + c.botID + ">"} {
		if rest, ok := strings.CutPrefix(s, m); ok {
			s = strings.TrimSpace(rest)
			break
		}
	}
	for _, m := range []string{"<@" + c.botID + ">", "<@!" + c.botID + ">"} {
		s = strings.ReplaceAll(s, m, "@"+c.botName)
	}
	return s
}

// person is the verified sender: the user from the payload, named by the server nickname
// where there is one.
func person(u *discordgo.User, member *discordgo.Member) core.Person {
	if u == nil && member != nil {
		u = member.User
	}
	if u == nil {
		return core.Person{}
	}
	var nick string
	if member != nil {
		nick = member.Nick
	}
	name := cmp.Or(nick, u.GlobalName, u.Username, u.ID)
	return core.Person{ID: u.ID, Name: name, IsBot: u.Bot, Roles: roleKeys(member)}
}

// roleKeys are the sender's guild roles as access entries ("discord-role:<id>"), the form
// access.approvers lists them in; the engine lets a listed role decide.
func roleKeys(member *discordgo.Member) []string {
	if member == nil {
		return nil
	}
	out := make([]string, 0, len(member.Roles))
	for _, r := range member.Roles {
		if r != "" {
			out = append(out, "discord-role:"+r)
		}
	}
	return out
}

// address is the conversation of a channel: a DM is its own channel with no guild, a
// thread is a session of its own under its parent channel.
func (c *Channel) address(ctx context.Context, guildID, channelID string) core.Address {
	a := core.Address{Channel: Name, Account: guildID, Chat: channelID}
	if guildID == "" {
		return a
	}
	if parent, ok := c.threadParent(ctx, channelID); ok {
		a.Chat, a.Thread = parent, channelID
	}
	return a
}

// threadParent reports the parent channel when channelID is a thread, from the library's
// state (which the gateway fills) or, for a channel it does not know, asked once.
func (c *Channel) threadParent(ctx context.Context, channelID string) (string, bool) {
	if info, ok := c.chans.get(channelID); ok {
		return info.parent, info.thread
	}
	var ch *discordgo.Channel
	if c.s.State != nil {
		ch, _ = c.s.State.Channel(channelID)
	}
	if ch == nil {
		err := c.doWithin(ctx, 2*time.Second, 2, "looking up channel "+channelID, func(opts ...discordgo.RequestOption) error {
			var err error
			ch, err = c.s.Channel(channelID, opts...)
			return err
		})
		if err != nil {
			// Not cached: the next message asks again; until then it is taken for no thread.
			c.log.Warn("could not tell whether a channel is a thread", "chat", channelID, "err", err)
			return "", false
		}
	}
	info := chanInfo{thread: ch.IsThread(), parent: ch.ParentID}
	if info.thread && info.parent == "" {
		info.thread = false
	}
	c.chans.put(channelID, info)
	return info.parent, info.thread
}

// chanInfo is what the adapter needs to know about a channel.
type chanInfo struct {
	thread bool
	parent string
}

// channelCache remembers what channels are; a channel never turns into a thread.
type channelCache struct {
	mu sync.RWMutex
	m  map[string]chanInfo
}

func newChannelCache() *channelCache { return &channelCache{m: map[string]chanInfo{}} }

func (cc *channelCache) get(id string) (chanInfo, bool) {
	cc.mu.RLock()
	defer cc.mu.RUnlock()
	i, ok := cc.m[id]
	return i, ok
}

func (cc *channelCache) put(id string, i chanInfo) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.m) > 100_000 {
		clear(cc.m) // a bound, not a policy: the entries are cheap to learn again
	}
	cc.m[id] = i
}

// discordEpoch is the first millisecond of 2015, where Discord's snowflake clocks start.
const discordEpoch = 1420070400000

// snowflakeTime is when a Discord id was made; interactions carry no other time.
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return time.Now()
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch)
}

// recent remembers the last event ids seen, so an event the gateway delivers twice (a
// resume replaying what was received) is handled once. The engine de-duplicates across
// restarts; this also covers read-only commands and keeps an interaction from being
// acknowledged twice.
type recent struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

func newRecent(n int) *recent {
	return &recent{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add records id and reports whether it is new.
func (r *recent) add(id string) bool {
	if id == "" {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ids[id]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.ids[id] = struct{}{}
	return true
}
