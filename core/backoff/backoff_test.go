package backoff

import (
	"testing"
	"time"
)

func TestNewDoublesUpToTheLimit(t *testing.T) {
	b := New(time.Second, 5*time.Second)
	var got []time.Duration
	for range 5 {
		got = append(got, b.NextBackOff())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	b.Reset()
	if d := b.NextBackOff(); d != time.Second {
		t.Fatalf("after Reset: %v, want the first wait", d)
	}
	if d := New(time.Second, 0).NextBackOff(); d != time.Second {
		t.Fatalf("a limit below the first wait: %v", d)
	}
}

func TestJitteredStaysAroundItsStep(t *testing.T) {
	b := Jittered(time.Second, time.Second)
	for range 100 {
		if d := b.NextBackOff(); d < 500*time.Millisecond || d > 1500*time.Millisecond {
			t.Fatalf("a jittered wait of %v for a step of 1s", d)
		}
	}
}
