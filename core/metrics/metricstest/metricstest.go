// Package metricstest reads series from a metrics.Metrics registry in tests.
package metricstest

import (
	"testing"

	"github.com/plangate/plangate/core/metrics"
)

// Sample reads one series from m's registry: a counter's or gauge's value, or a
// histogram's sample count, of the first series of name whose labels include the given
// name/value pairs; 0 when there is none.
func Sample(t testing.TB, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue()
			case s.GetHistogram() != nil:
				return float64(s.GetHistogram().GetSampleCount())
			}
			return s.GetGauge().GetValue()
		}
	}
	return 0
}
