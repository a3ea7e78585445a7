package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
)

// A conversation exists once its user made it with New conversation (POST /conversations)
// or once its session is in the store; any other id is answered 404 and stores nothing.
// Made conversations are the user's channel state record "conversations" (ids,
// space-separated), so every replica and a restarted process know them before their
// first message makes a session.

// conversationsKey is the channel state key, per user, of the conversations they made.
const conversationsKey = "conversations"

// made returns the ids of the conversations user made with New conversation.
func (c *Channel) made(ctx context.Context, user string) ([]string, error) {
	v, _, err := c.d.Store.ChannelState(ctx, Name, user, conversationsKey)
	if err != nil {
		return nil, fmt.Errorf("reading the conversations of %s: %w", user, err)
	}
	return strings.Fields(v), nil
}

// known reports whether conversation a exists: open in this process, stored as a
// session, or made by its user.
func (c *Channel) known(ctx context.Context, a core.Address) (bool, error) {
	c.mu.Lock()
	_, open := c.convos[a.SessionID()]
	c.mu.Unlock()
	if open {
		return true, nil
	}
	_, err := c.d.Store.Session(ctx, a.SessionID())
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, core.ErrNotFound) {
		return false, fmt.Errorf("reading session %s: %w", a.SessionID(), err)
	}
	ids, err := c.made(ctx, a.Account)
	return slices.Contains(ids, a.Chat), err
}

// existing returns the conversation id of r's path for v, or answers 404 (an id that is
// not one of v's conversations) or 500 and returns ok false. It creates nothing.
func (c *Channel) existing(w http.ResponseWriter, r *http.Request, v viewer) (string, *convo, bool) {
	id := r.PathValue("id")
	if !convID.MatchString(id) {
		http.NotFound(w, r)
		return "", nil, false
	}
	a := address(v.Name, id)
	ok, err := c.known(r.Context(), a)
	if err != nil {
		c.log.Error("looking up a conversation", "user", v.Name, "conversation", id, "err", err)
		http.Error(w, "The conversation could not be read; details are in the gateway log.", http.StatusInternalServerError)
		return "", nil, false
	}
	if !ok {
		http.Error(w, fmt.Sprintf("There is no conversation %s. Start one with New conversation on the chat page (/).", id), http.StatusNotFound)
		return "", nil, false
	}
	return id, c.convo(r.Context(), a), true
}

// newConversation is the New conversation button, and the message box of a user who has
// no conversation yet (text, optional): a fresh id, kept in the user's record before the
// page is shown, unless the user has max_conversations already or the text is too long;
// the text is then sent in it as from the message box.
func (c *Channel) newConversation(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	text := strings.TrimSpace(r.PostForm.Get("text"))
	if why := c.tooLong(text); why != "" {
		c.answer(w, r, "/", http.StatusRequestEntityTooLarge, why)
		return
	}
	id, ok := c.makeConversation(w, r, v)
	if !ok {
		return
	}
	if text == "" {
		http.Redirect(w, r, "/c/"+id, http.StatusSeeOther)
		return
	}
	// Whoever posted, the answer is the new conversation's page (a script's post too: it
	// cannot know the id otherwise).
	r.Header.Del("X-Plangate-Fetch")
	c.say(w, r, v, id, c.convo(ctx, address(v.Name, id)), text)
}

// makeConversation stores a fresh conversation of v and returns its id, or answers why
// not and returns false.
func (c *Channel) makeConversation(w http.ResponseWriter, r *http.Request, v viewer) (string, bool) {
	ctx := r.Context()
	c.making.Lock() // one user's two clicks must not both pass the cap
	defer c.making.Unlock()
	if n := len(c.conversations(r, v, "")); n >= c.cfg.MaxConversations {
		http.Error(w, fmt.Sprintf("You have %d %s, the most one user may have (channels.web.max_conversations); nothing was created. Continue in one of them.",
			n, plural(n, "conversation", "conversations")), http.StatusConflict)
		return "", false
	}
	ids, err := c.made(ctx, v.Name)
	if err == nil {
		id := randomID(5)
		if err = c.d.Store.SetChannelState(ctx, Name, v.Name, conversationsKey, strings.Join(append(ids, id), " ")); err == nil {
			c.convo(ctx, address(v.Name, id))
			return id, true
		}
	}
	c.log.Error("making a conversation", "user", v.Name, "err", err)
	http.Error(w, "The conversation could not be created; details are in the gateway log. Try again in a moment.", http.StatusInternalServerError)
	return "", false
}

// titlesKey is the channel state key, per user, of the titles their conversations got
// from the first thing asked in them (JSON: id -> title).
const titlesKey = "titles"

// titles returns the titles of user's conversations by id.
func (c *Channel) titles(ctx context.Context, user string) (map[string]string, error) {
	v, _, err := c.d.Store.ChannelState(ctx, Name, user, titlesKey)
	if err != nil {
		return nil, fmt.Errorf("reading the conversation titles of %s: %w", user, err)
	}
	out := map[string]string{}
	if v != "" {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("decoding the conversation titles of %s: %w", user, err)
		}
	}
	return out, nil
}

// noteTitle gives conversation id of user its title from text, unless it has one or
// text is no request (requestTitle). A title is only a name, so a failure is logged and
// the conversation goes on untitled.
func (c *Channel) noteTitle(ctx context.Context, user, id, text string) {
	title, ok := requestTitle(text)
	if !ok {
		return
	}
	c.titling.Lock()
	defer c.titling.Unlock()
	ts, err := c.titles(ctx, user)
	if err == nil {
		if _, has := ts[id]; has {
			return
		}
		ts[id] = title
		b, _ := json.Marshal(ts) // a map of strings always encodes
		err = c.d.Store.SetChannelState(ctx, Name, user, titlesKey, string(b))
	}
	if err != nil {
		c.log.Warn("keeping a conversation's title", "user", user, "conversation", id, "err", err)
	}
}

// tooLong is the refusal of a message or button value over max_message_bytes, "" when
// text fits.
func (c *Channel) tooLong(text string) string {
	if len(text) <= c.cfg.MaxMessageBytes {
		return ""
	}
	return fmt.Sprintf("That message is %s; the most is %s (channels.web.max_message_bytes). Nothing was sent: shorten it and send it again.",
		sizeWords(len(text)), sizeWords(c.cfg.MaxMessageBytes))
}

func sizeWords(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
}

// openStream counts a live page of user against max_streams; ok is false when the user
// has that many open on this replica. done ends the count.
func (c *Channel) openStream(user string) (done func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams[user] >= c.cfg.MaxStreams {
		return nil, false
	}
	c.streams[user]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.streams[user]--; c.streams[user] <= 0 {
			delete(c.streams, user)
		}
	}, true
}
