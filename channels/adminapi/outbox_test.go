package adminapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/core"
)

// A reply the platform refused for good is dropped at once, listed by the admin API with
// its reason, and its chat gets one notice once the platform takes replies again.
func TestDroppedRepliesAreListed(t *testing.T) {
	e := newEnv(t, token)
	var page adminapi.Page[adminapi.DroppedJSON]
	code, body, _ := e.do("GET", "/api/v1/outbox/dropped", "")
	if code != 200 || !strings.Contains(body, `"items": []`) {
		t.Fatalf("no drops yet: %d %s, want []", code, body)
	}

	e.chat.FailSend(fmt.Errorf("telegram sendMessage: Forbidden: bot was blocked by the user: %w", core.ErrRefused))
	e.say("/plan on")
	e.say("/plan off")
	e.chat.FailSend(nil)
	if got := len(e.chat.Replies()); got != 0 {
		t.Fatalf("the refusing platform took %d replies", got)
	}
	code, body, _ = e.do("GET", "/api/v1/outbox/dropped", "")
	decode(t, body, &page)
	list := page.Items
	if code != 200 || len(list) != 2 || page.NextCursor != nil {
		t.Fatalf("dropped: %d %s, want the two refused replies", code, body)
	}
	newest := list[0]
	if newest.ID <= list[1].ID || newest.SessionID != addr.SessionID() || newest.Address.Chat != "100" || newest.Address.Channel != "telegram" ||
		!strings.HasPrefix(newest.Reason, "refused by the platform: ") || !strings.Contains(newest.Reason, "bot was blocked") ||
		!strings.HasPrefix(list[1].Text, "Plan mode is on") || newest.Files == nil || newest.CreatedAt != "2026-03-01T09:00:00Z" {
		t.Fatalf("dropped rows: %s", body)
	}
	if unsent, err := e.st.UnsentOutbox(context.Background(), nil, 0); err != nil || len(unsent) != 0 {
		t.Fatalf("refused replies still unsent: %+v, %v", unsent, err)
	}

	code, body, _ = e.do("GET", "/api/v1/outbox/dropped?limit=1", "")
	decode(t, body, &page)
	if code != 200 || len(page.Items) != 1 || page.Items[0].ID != newest.ID || page.NextCursor == nil {
		t.Fatalf("limit=1: %d %s", code, body)
	}
	code, body, _ = e.do("GET", "/api/v1/outbox/dropped?limit=1&cursor="+*page.NextCursor, "")
	decode(t, body, &page)
	if code != 200 || len(page.Items) != 1 || page.Items[0].ID != list[1].ID || page.NextCursor != nil {
		t.Fatalf("the second page: %d %s", code, body)
	}
	for _, bad := range []string{"0", "x", "1001"} {
		if code, body, _ := e.do("GET", "/api/v1/outbox/dropped?limit="+bad, ""); code != 400 || !strings.Contains(body, "limit") {
			t.Errorf("limit=%s: %d %s, want 400", bad, code, body)
		}
	}

	// The notice: one, once the platform takes replies again (the retry loop's pass).
	e.eng.RetryUnsent(context.Background(), nil, 0)
	e.eng.RetryUnsent(context.Background(), nil, 0)
	replies := e.chat.Replies()
	if len(replies) != 1 || !strings.HasPrefix(replies[0].Text, `2 replies could not be delivered (the platform refused them); the last began "Plan mode is off`) {
		t.Fatalf("replies after the refusals: %+v; want one notice", replies)
	}
}

// An error that is not a refusal keeps the reply for a retry: nothing is listed as dropped.
func TestTemporaryFailureIsNotDropped(t *testing.T) {
	e := newEnv(t, token)
	e.chat.FailSend(errors.New("telegram answered 502 Bad Gateway"))
	e.say("/plan on")
	e.chat.FailSend(nil)
	code, body, _ := e.do("GET", "/api/v1/outbox/dropped", "")
	if code != 200 || !strings.Contains(body, `"items": []`) {
		t.Fatalf("a temporary failure was dropped: %d %s", code, body)
	}
	if unsent, err := e.st.UnsentOutbox(context.Background(), nil, 0); err != nil || len(unsent) != 1 {
		t.Fatalf("unsent %+v, %v; want the reply kept", unsent, err)
	}
}
