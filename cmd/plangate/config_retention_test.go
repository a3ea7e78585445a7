package main

import (
	"slices"
	"testing"
	"time"
)

// TestRetentionConfig reads store.retention's ages (days, Go durations, 0) and names the
// line of a bad one, changing nothing else.
func TestRetentionConfig(t *testing.T) {
	path := writeConfig(t, "store:\n  retention: {transcripts: 7d, outbox: 36h, inbound: 0, audit: 1h30m}\n")
	cfg, err := LoadConfig(path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := RetentionConfig{Transcripts: 7 * Day, Outbox: Age(36 * time.Hour), Inbound: 0, Audit: Age(90 * time.Minute)}
	if cfg.Store.Retention != want {
		t.Fatalf("store.retention = %+v, want %+v", cfg.Store.Retention, want)
	}
	partial := writeConfig(t, "store:\n  retention:\n    audit: 30d\n")
	if cfg, err := LoadConfig(partial, env(nil)); err != nil {
		t.Fatal(err)
	} else if r := cfg.Store.Retention; r.Audit != 30*Day || r.Transcripts != 90*Day || r.Inbound != 2*Day {
		t.Fatalf("a partial store.retention = %+v: want audit 30d and the other defaults", r)
	}

	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"not an age", "store:\n  retention:\n    transcripts: 3 months\n",
			[]string{`FILE:3: store.retention.transcripts: expected an age such as 90d, 48h or 0 (keep forever), got "3 months"`}},
		{"days with a fraction", "store:\n  retention:\n    outbox: 1.5d\n",
			[]string{`FILE:3: store.retention.outbox: expected an age such as 90d, 48h or 0 (keep forever), got "1.5d"`}},
		{"negative", "store:\n  retention:\n    audit: -1h\n",
			[]string{`FILE:3: store.retention.audit is -1h0m0s: it must be 0s or more`}},
		{"inbound shorter than redeliveries", "store:\n  retention:\n    inbound: 10m\n",
			[]string{`FILE:3: store.retention.inbound is 10m0s: keep event ids at least 2h0m0s (platforms redeliver for up to an hour), or 0 to keep them forever`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadProblems(t, tc.body, nil); !slices.Equal(got, tc.want) {
				t.Fatalf("problems = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestRetentionOutboxFloor: delivered replies stay at least a day past
// channels.outbox_max_age, whatever store.retention.outbox says; 0 still keeps them.
func TestRetentionOutboxFloor(t *testing.T) {
	for _, tc := range []struct {
		outbox Age
		maxAge time.Duration
		want   time.Duration
	}{
		{30 * Day, 24 * time.Hour, 30 * 24 * time.Hour},
		{Age(time.Hour), 24 * time.Hour, 48 * time.Hour},
		{0, 24 * time.Hour, 0},
	} {
		r := defaultRetention()
		r.Outbox = tc.outbox
		if got := r.retention(tc.maxAge).Outbox; got != tc.want {
			t.Errorf("outbox %s with outbox_max_age %s kept for %s, want %s", tc.outbox, tc.maxAge, got, tc.want)
		}
	}
}
