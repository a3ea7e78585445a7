// Package metrics counts what plangate really does, on a Prometheus registry of its own
// (github.com/prometheus/client_golang), with the metric names of docs/design.md §10.
// Parts of plangate record through small interfaces they define (core's Observer, the
// HTTP server's); this package satisfies them, and cmd/plangate wires it. A nil *Metrics
// records nothing, so tests and the terminal need no registry.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds plangate's collectors.
type Metrics struct {
	reg          *prometheus.Registry
	inbound      *prometheus.CounterVec
	replies      *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	decisions    *prometheus.CounterVec
	plansPending prometheus.Gauge
	model        *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	tools        *prometheus.CounterVec
	nudges       *prometheus.CounterVec
	commit       *prometheus.HistogramVec
	http         *prometheus.CounterVec
	pruned       *prometheus.CounterVec

	// The children of the per-commit series, looked up once: every transition commits.
	commitDurable, commitLazy prometheus.Observer
}

// New registers every collector, plus the Go runtime and process collectors, on a new
// registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_inbound_total",
			Help: "Inbound platform events by channel and outcome (handled, duplicate, refused, failed)."}, []string{"channel", "outcome"}),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_replies_total",
			Help: "Replies by channel and outcome (sent, failed, dropped)."}, []string{"channel", "outcome"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_outbox_dropped_total",
			Help: "Committed replies given up by channel and reason (expired: older than channels.outbox_max_age; refused: by the platform, for good; told: undeliverable, the chat got a notice instead)."}, []string{"channel", "reason"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_access_refusals_total",
			Help: "Inbound messages refused before any session saw them, by channel and reason (not_allowed: the sender is not in access.allowed_users; throttled: over access.rate_limit)."}, []string{"channel", "reason"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_decisions_total",
			Help: "Plan decisions by kind (accepted, auto_accepted, approval_recorded, revised, abandoned, aborted, expired, refused)."}, []string{"kind"}),
		plansPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "plangate_plans_pending",
			Help: "Plan versions waiting for a decision."}),
		model: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plangate_model_request_seconds",
			Help: "Model request latency by outcome (ok, error, fallback: answered by llm.model after llm.plan_model failed).", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10)}, []string{"outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_model_tokens_total",
			Help: "Model tokens as the API's usage reports them, by kind (prompt: all prompt tokens, cached among them; cached: prompt tokens the server served from its prefix cache; completion) and phase (planning, executing, chat)."}, []string{"kind", "phase"}),
		tools: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_tool_calls_total",
			Help: "Tool calls by tool and outcome (ran, blocked, failed)."}, []string{"tool", "outcome"}),
		nudges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_nudges_total",
			Help: "Nudge occurrences by outcome (fired, missed)."}, []string{"outcome"}),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plangate_store_commit_seconds",
			Help: "Store commit time; durable=true for fsynced commits.", Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12)}, []string{"durable"}),
		http: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_http_requests_total",
			Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plangate_store_pruned_rows_total",
			Help: "Rows store.retention pruned, by table (messages, outbox, plan_events, inbound)."}, []string{"table"}),
	}
	reg.MustRegister(m.inbound, m.replies, m.dropped, m.refusals, m.decisions, m.plansPending, m.model, m.tokens, m.tools, m.nudges, m.commit, m.http, m.pruned,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.commitDurable, m.commitLazy = m.commit.WithLabelValues("true"), m.commit.WithLabelValues("false")
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry itself: serve adds the MCP servers' collector, tests gather it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AccessRefused counts one inbound message the access gate refused.
func (m *Metrics) AccessRefused(channel, reason string) {
	if m != nil {
		m.refusals.WithLabelValues(channel, reason).Inc()
	}
}

// Inbound counts one inbound platform event.
func (m *Metrics) Inbound(channel, outcome string) {
	if m != nil {
		m.inbound.WithLabelValues(channel, outcome).Inc()
	}
}

// Reply counts one reply delivery outcome.
func (m *Metrics) Reply(channel, outcome string) {
	if m != nil {
		m.replies.WithLabelValues(channel, outcome).Inc()
	}
}

// OutboxDropped counts one committed reply given up (expired, refused, told).
func (m *Metrics) OutboxDropped(channel, reason string) {
	if m != nil {
		m.dropped.WithLabelValues(channel, reason).Inc()
	}
}

// Decision counts one decision.
func (m *Metrics) Decision(kind string) {
	if m != nil {
		m.decisions.WithLabelValues(kind).Inc()
	}
}

// PlansPending sets how many plan versions wait for a decision.
func (m *Metrics) PlansPending(n int) {
	if m != nil {
		m.plansPending.Set(float64(n))
	}
}

// ModelRequest observes one model call.
func (m *Metrics) ModelRequest(outcome string, d time.Duration) {
	if m != nil {
		m.model.WithLabelValues(outcome).Observe(d.Seconds())
	}
}

// ModelTokens counts one answered model call's tokens by phase.
func (m *Metrics) ModelTokens(phase string, prompt, cached, completion int64) {
	if m == nil {
		return
	}
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"prompt", prompt}, {"cached", cached}, {"completion", completion}} {
		if k.n > 0 {
			m.tokens.WithLabelValues(k.kind, phase).Add(float64(k.n))
		}
	}
}

// ToolCall counts one tool call by outcome (ran, blocked, failed).
func (m *Metrics) ToolCall(tool, outcome string) {
	if m != nil {
		m.tools.WithLabelValues(tool, outcome).Inc()
	}
}

// Nudge counts one nudge occurrence (fired, missed).
func (m *Metrics) Nudge(outcome string) {
	if m != nil {
		m.nudges.WithLabelValues(outcome).Inc()
	}
}

// StoreCommit observes one store commit.
func (m *Metrics) StoreCommit(durable bool, d time.Duration) {
	switch {
	case m == nil:
	case durable:
		m.commitDurable.Observe(d.Seconds())
	default:
		m.commitLazy.Observe(d.Seconds())
	}
}

// StorePruned counts rows deleted from table by one batch of the pruner.
func (m *Metrics) StorePruned(table string, rows int) {
	if m != nil {
		m.pruned.WithLabelValues(table).Add(float64(rows))
	}
}

// HTTPRequest counts one HTTP request by route pattern and status code.
func (m *Metrics) HTTPRequest(route string, code int) {
	if m != nil {
		m.http.WithLabelValues(route, statusText(code)).Inc()
	}
}

func statusText(code int) string {
	const digits = "0123456789"
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{digits[code/100], digits[code/10%10], digits[code%10]})
}
