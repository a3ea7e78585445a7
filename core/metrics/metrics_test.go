package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core/metrics"
)

func TestMetricNamesAndNilSafety(t *testing.T) {
	var none *metrics.Metrics // records nothing, never panics
	none.Inbound("telegram", "handled")
	none.StoreCommit(true, time.Millisecond)
	none.OutboxDropped("telegram", "expired")
	none.AccessRefused("telegram", "throttled")
	none.ModelTokens("chat", 1, 1, 1)

	m := metrics.New()
	m.Inbound("telegram", "handled")
	m.Inbound("telegram", "duplicate")
	m.Reply("slack", "sent")
	m.Decision("accepted")
	m.PlansPending(3)
	m.ModelRequest("ok", 20*time.Millisecond)
	m.ModelTokens("executing", 2048, 1920, 30)
	m.ModelTokens("executing", 100, 0, 5)
	m.ModelTokens("chat", 0, 0, 0) // a call that reported none
	m.ToolCall("write_file", "blocked")
	m.Nudge("fired")
	m.OutboxDropped("telegram", "expired")
	m.OutboxDropped("telegram", "expired")
	m.StoreCommit(true, 2*time.Millisecond)
	m.HTTPRequest("POST /webhooks/telegram", 401)
	m.AccessRefused("slack", "not_allowed")
	m.StorePruned("messages", 500)
	m.StorePruned("messages", 12)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`plangate_inbound_total{channel="telegram",outcome="handled"} 1`,
		`plangate_inbound_total{channel="telegram",outcome="duplicate"} 1`,
		`plangate_replies_total{channel="slack",outcome="sent"} 1`,
		`plangate_decisions_total{kind="accepted"} 1`,
		`plangate_plans_pending 3`,
		`plangate_model_request_seconds_count{outcome="ok"} 1`,
		`plangate_model_tokens_total{kind="prompt",phase="executing"} 2148`,
		`plangate_model_tokens_total{kind="cached",phase="executing"} 1920`,
		`plangate_model_tokens_total{kind="completion",phase="executing"} 35`,
		`plangate_tool_calls_total{outcome="blocked",tool="write_file"} 1`,
		`plangate_nudges_total{outcome="fired"} 1`,
		`plangate_outbox_dropped_total{channel="telegram",reason="expired"} 2`,
		`plangate_store_commit_seconds_count{durable="true"} 1`,
		`plangate_http_requests_total{code="401",route="POST /webhooks/telegram"} 1`,
		`plangate_access_refusals_total{channel="slack",reason="not_allowed"} 1`,
		`plangate_store_pruned_rows_total{table="messages"} 512`,
		`go_goroutines`, `process_cpu_seconds_total`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
