package slack

import (
	"fmt"
	"strings"
)

// What the fake Slack shows, and waiting for it.

// find returns the message ts in ch; f.mu must be held.
func (f *fakeSlack) find(ch, ts string) *shownMsg {
	for _, m := range f.msgs {
		if m.Channel == ch && m.TS == ts {
			return m
		}
	}
	return nil
}

// messages returns copies of the messages in ch, oldest first.
func (f *fakeSlack) messages(ch string) []shownMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []shownMsg
	for _, m := range f.msgs {
		if m.Channel == ch {
			out = append(out, *m)
		}
	}
	return out
}

func (f *fakeSlack) callsOf(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) ephemeralsFor(user string) []ephemeral {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ephemeral
	for _, e := range f.ephemerals {
		if e.User == user {
			out = append(out, e)
		}
	}
	return out
}

// waitText waits for a message in ch whose visible text contains s, and returns it.
func (f *fakeSlack) waitText(ch, s string) shownMsg {
	f.t.Helper()
	var found shownMsg
	f.waitFor(fmt.Sprintf("%q in %s", s, ch), func() bool {
		for _, m := range f.msgs {
			if m.Channel == ch && strings.Contains(m.shown(), s) {
				found = *m
				return true
			}
		}
		return false
	})
	return found
}

// waitEphemeral waits for an ephemeral message to user containing s.
func (f *fakeSlack) waitEphemeral(user, s string) ephemeral {
	f.t.Helper()
	var found ephemeral
	f.waitFor(fmt.Sprintf("an ephemeral %q for %s", s, user), func() bool {
		for _, e := range f.ephemerals {
			if e.User == user && strings.Contains(e.Text, s) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// waitFile waits for a file whose name contains s shared in ch.
func (f *fakeSlack) waitFile(ch, s string) shownMsg {
	f.t.Helper()
	var found shownMsg
	f.waitFor("a file "+s+" in "+ch, func() bool {
		for _, m := range f.msgs {
			if m.Channel == ch && m.File != "" && strings.Contains(m.File, s) {
				found = *m
				return true
			}
		}
		return false
	})
	return found
}

// waitView waits for the n-th views.open (1-based).
func (f *fakeSlack) waitView(n int) openedView {
	f.t.Helper()
	var v openedView
	f.waitFor(fmt.Sprintf("views.open #%d", n), func() bool {
		if len(f.views) >= n {
			v = f.views[n-1]
			return true
		}
		return false
	})
	return v
}
