package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/mcp"
)

// watchMCP shows the MCP servers to an operator: a readiness check per server
// ("mcp:<name>", listed only while the server is not up) and their series on /metrics.
// A server that is down never makes the replica unready: the bot still answers and its
// other tools work (docs/design.md §15 withdraws the server's tools, nothing more).
func (w *webServer) watchMCP(mgr *mcp.Manager) {
	if w == nil || mgr == nil {
		return
	}
	for _, st := range mgr.Servers() {
		name := st.Name
		w.srv.AddCheck("mcp:"+name, func(context.Context) error { return mcpReadiness(mgr, name) })
	}
	w.metrics.Registry().MustRegister(mcpCollector{mgr: mgr})
}

// mcpReadiness is one server's readiness: Unlisted while up, else a note saying since when
// and why (the error is already free of the configured secrets).
func mcpReadiness(mgr *mcp.Manager, name string) error {
	for _, st := range mgr.Servers() {
		if st.Name != name {
			continue
		}
		since := st.Since.UTC().Format(time.RFC3339)
		switch st.State {
		case mcp.StateUp:
			return httpserver.Unlisted
		case mcp.StateStarting:
			return httpserver.ReadyNote("starting since " + since + ", its tools not offered yet")
		case mcp.StateStopped:
			return httpserver.ReadyNote("stopped")
		}
		return httpserver.ReadyNote(fmt.Sprintf("down since %s (%d restarts), its tools withdrawn: %s", since, st.Restarts, clip(st.LastError, 110)))
	}
	return httpserver.Unlisted
}

// clip keeps the first n runes of s: /readyz cuts a check's text at 200 characters, and
// the error is the end of the note.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

var (
	mcpUpDesc = prometheus.NewDesc("plangate_mcp_server_up",
		"1 while the MCP server is connected and its tools are offered, else 0.", []string{"server"}, nil)
	mcpRestartsDesc = prometheus.NewDesc("plangate_mcp_server_restarts_total",
		"Connections to the MCP server attempted after the first one.", []string{"server"}, nil)
)

// mcpCollector reads the servers' states at each scrape, so the series are never stale
// and nothing has to be told of each change.
type mcpCollector struct{ mgr *mcp.Manager }

func (c mcpCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- mcpUpDesc
	ch <- mcpRestartsDesc
}

func (c mcpCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.mgr.Servers() {
		up := 0.0
		if st.State == mcp.StateUp {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(mcpUpDesc, prometheus.GaugeValue, up, st.Name)
		ch <- prometheus.MustNewConstMetric(mcpRestartsDesc, prometheus.CounterValue, float64(st.Restarts), st.Name)
	}
}
