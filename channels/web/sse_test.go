package web

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
)

type sseEvent struct{ id, name, data string }

// openStream connects to a conversation's stream, resuming after lastID when set.
func (c *client) openStream(t *testing.T, conv, after, lastID string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.e.srv.URL+"/c/"+conv+"/events?after="+after, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res, bufio.NewReader(res.Body)
}

func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %+v)", err, ev)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.name != "":
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestSSEResumeAfterDisconnect(t *testing.T) {
	e := bareEnv(t)
	e.runIdle(t)
	alice := e.signIn("alice")
	e.makeConversation("alice", "live")
	a := address("alice", "live")
	send := func(text string) {
		if _, err := e.web.Send(t.Context(), core.Reply{To: a, Text: text}); err != nil {
			t.Fatal(err)
		}
	}

	res, r := alice.openStream(t, "live", e.web.eventID(0), "")
	send("first reply")
	first := readEvent(t, r)
	if first.name != "msg" || !strings.Contains(first.data, "first reply") {
		t.Fatalf("first event %+v", first)
	}
	res.Body.Close() // the browser loses the connection

	send("second reply")
	send("third reply")
	res, r = alice.openStream(t, "live", e.web.eventID(0), first.id)
	defer res.Body.Close()
	second, third := readEvent(t, r), readEvent(t, r)
	if !strings.Contains(second.data, "second reply") || !strings.Contains(third.data, "third reply") {
		t.Fatalf("after resuming from %s: %+v then %+v, want the second and third replies", first.id, second, third)
	}
	if second.id == first.id || third.id == second.id {
		t.Fatalf("ids repeat: %s %s %s", first.id, second.id, third.id)
	}
	send("fourth reply")
	if ev := readEvent(t, r); !strings.Contains(ev.data, "fourth reply") {
		t.Fatalf("live after resuming: %+v", ev)
	}

	// An id from before a restart cannot be resumed from: the page is told to reload,
	// which rebuilds it from the store.
	old, r := alice.openStream(t, "live", "", "zzzz-3")
	defer old.Body.Close()
	if ev := readEvent(t, r); ev.name != "reload" {
		t.Fatalf("an id of another process: %+v, want reload", ev)
	}

	// Bob cannot listen to alice's conversation: his stream of the same id is his own.
	bob := e.signIn("bob")
	if code, _ := bob.status("/c/live/events"); code != http.StatusNotFound {
		t.Fatalf("bob's stream of a conversation he never made: %d, want 404", code)
	}
	e.makeConversation("bob", "live")
	bres, br := bob.openStream(t, "live", e.web.eventID(0), "")
	defer bres.Body.Close()
	if _, err := e.web.Send(t.Context(), core.Reply{To: address("bob", "live"), Text: "for bob"}); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, br); !strings.Contains(ev.data, "for bob") {
		t.Fatalf("bob's stream: %+v", ev)
	}
}
