package nudges

import (
	"strings"
	"testing"
	"time"
)

func TestSpecsCheckAndNext(t *testing.T) {
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC) // a Monday
	tests := []struct {
		spec, err string
		next      time.Time
	}{
		{spec: "0 9 * * 1-5", next: time.Date(2026, 3, 2, 9, 0, 0, 0, time.Local)},
		{spec: "CRON_TZ=UTC 0 9 * * 1-5", next: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{spec: "@every 2h", next: now.Add(2 * time.Hour)},
		{spec: "@daily"},
		{spec: "0 9 * *", err: "expected exactly 5 fields, found 4"},
		{spec: "@every 500ms", err: "@every must be at least 1s"},
		{spec: "0 0 30 2 *", err: "never fires"},
		{spec: "CRON_TZ=Mars/Olympus 0 9 * * *", err: "provided bad location"},
		{spec: "CRON_TZ=UTC", err: "needs a schedule"},
		{spec: "", err: "empty spec"},
		{spec: "61 * * * *", err: "end of range (61) above maximum (59)"},
	}
	var s Specs
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			err := s.Check(tc.spec, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Check(%q) = %v, want an error with %q", tc.spec, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%q) = %v", tc.spec, err)
			}
			next, err := s.Next(tc.spec, now)
			if err != nil || !next.After(now) {
				t.Fatalf("Next(%q) = %v, %v", tc.spec, next, err)
			}
			if !tc.next.IsZero() && !next.Equal(tc.next) {
				t.Errorf("Next(%q) = %v, want %v", tc.spec, next, tc.next)
			}
		})
	}
}
