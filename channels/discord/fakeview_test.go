package discord

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// customIDs lists the custom_ids of a message's button rows.
func customIDs(raw json.RawMessage) []string {
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
			Label    string `json:"label"`
		} `json:"components"`
	}
	_ = json.Unmarshal(raw, &rows)
	var out []string
	for _, r := range rows {
		for _, c := range r.Components {
			out = append(out, c.CustomID)
		}
	}
	return out
}

// shown returns copies of the messages of a channel that are visible to everyone, oldest
// first.
func (f *fakeDiscord) shown(channel string) []shownMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []shownMsg
	for _, m := range f.msgs {
		if m.Channel == channel && !m.Deleted && m.Flags&64 == 0 {
			out = append(out, *m)
		}
	}
	return out
}

// all returns copies of every message, ephemeral and deleted ones included.
func (f *fakeDiscord) all() []shownMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]shownMsg, len(f.msgs))
	for i, m := range f.msgs {
		out[i] = *m
	}
	return out
}

func (f *fakeDiscord) callbacksOf(interaction string) []callback {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []callback
	for _, c := range f.callbacks {
		if c.Interaction == interaction {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeDiscord) callsMatching(re string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	rx := regexp.MustCompile(re)
	var out []apiCall
	for _, c := range f.calls {
		if rx.MatchString(c.Method + " " + c.Path) {
			out = append(out, c)
		}
	}
	return out
}

// waitFor waits until cond (called without f.mu) holds.
func (f *fakeDiscord) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("waited 10s for %s; channel C1 shows %q", what, contents(f.shown("C1")))
		}
	}
}

// waitText waits for a visible message in channel containing s and returns it.
func (f *fakeDiscord) waitText(channel, s string) shownMsg {
	f.t.Helper()
	var found shownMsg
	f.waitFor(fmt.Sprintf("%q in %s", s, channel), func() bool {
		for _, m := range f.shown(channel) {
			if strings.Contains(m.Content, s) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

func contents(ms []shownMsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}
