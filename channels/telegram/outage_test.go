package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/coretest"
)

// heal ends every failure fail set up: the platform is back.
func (f *fakeAPI) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails = nil
}

// The Bot API's send side fails for one chat (500, or 429 with retry_after) for longer
// than outbox_max_age, by the engine's clock: the other chat is never held, and once
// Telegram takes messages again the chat's replies arrive in the order they were
// committed, the oldest that aged out replaced by one notice.
func TestSendOutageKeepsOrderAndTellsTheDrops(t *testing.T) {
	const (
		maxAge  = 2 * time.Minute
		outage  = 150 * time.Second
		after   = time.Minute
		message = 10 * time.Second
		every   = 15 * time.Second
		other   = int64(502)
	)
	for _, tc := range []struct {
		name  string
		code  int
		desc  string
		retry int
	}{
		{"500", 500, "Internal Server Error", 0},
		{"429", 429, "Too Many Requests: retry after 2", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := coretest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
			e := newEnv(t, func(e *env) { e.Now = clock.Now })
			ctx := context.Background()
			down := func(p map[string]string) bool { return p["chat_id"] == strconv.FormatInt(private, 10) }
			e.api.fail("sendMessage", -1, tc.code, tc.desc, tc.retry, down)
			start, n, retryAt := clock.Now(), 0, clock.Now()
			tick := func() {
				if !clock.Now().Before(retryAt) {
					e.Engine.RetryUnsent(ctx, nil, maxAge)
					retryAt = clock.Now().Add(every)
				}
			}
			say := func(i int) {
				t.Helper()
				calls := e.Model.CallCount()
				e.Model.Push(e.sessionID(private), core.ModelResponse{Text: fmt.Sprintf("answer %02d", i)})
				e.Model.Push(e.sessionID(other), core.ModelResponse{Text: fmt.Sprintf("answer %02d", i)})
				e.api.say(private, alice, fmt.Sprintf("question %d", i))
				e.api.say(other, bob, fmt.Sprintf("question %d", i))
				e.api.waitFor("both questions handled", func() bool { return e.Model.CallCount() >= calls+2 })
				e.Idle()
			}
			for ; clock.Now().Sub(start) < outage; n++ {
				say(n)
				tick()
				clock.Add(message)
			}
			if got := e.api.messages(private); len(got) != 0 {
				t.Fatalf("the failing chat showed %d messages", len(got))
			}
			if got := e.api.messages(other); len(got) != n {
				t.Fatalf("the other chat showed %d of %d replies during the outage: it was held", len(got), n)
			}
			e.api.heal()
			for ; clock.Now().Sub(start) < outage+after; n++ {
				say(n)
				tick()
				clock.Add(message)
			}
			for range 60 {
				clock.Add(every)
				tick()
			}
			e.Idle()

			var answers, notices []string
			for _, m := range e.api.messages(private) {
				if strings.HasPrefix(m.Text, "answer ") {
					answers = append(answers, m.Text)
				} else {
					notices = append(notices, m.Text)
				}
			}
			dropped, err := e.Store.DroppedOutbox(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dropped {
				if d.SessionID != e.sessionID(private) {
					t.Fatalf("a reply of another chat was dropped: %+v", d)
				}
			}
			if len(dropped) == 0 || len(answers)+len(dropped) != n {
				t.Fatalf("%d shown + %d dropped, want %d, some dropped", len(answers), len(dropped), n)
			}
			for i, s := range answers {
				if want := fmt.Sprintf("answer %02d", len(dropped)+i); s != want {
					t.Fatalf("shown answer %d is %q, want %q (in commit order): %q", i, s, want, answers)
				}
			}
			want := fmt.Sprintf(`%d replies could not be delivered during the outage; the last began "answer %02d". /plan shows where things stand.`, len(dropped), len(dropped)-1)
			if len(notices) != 1 || notices[0] != want {
				t.Fatalf("notices %q, want one: %q", notices, want)
			}
			if rows, err := e.Store.UnsentOutbox(ctx, nil, 0); err != nil || len(rows) != 0 {
				t.Fatalf("left unsent: %+v, %v", rows, err)
			}
		})
	}
}
