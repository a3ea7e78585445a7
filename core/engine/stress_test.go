package engine_test

// Regression tests for defects found in review. Each comment describes the defect; the
// test fails if it comes back.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
)

func TestRegressionStressFastPath(t *testing.T) {
	h := newHarness(t)
	h.toPending("main", "Docs")
	var wg sync.WaitGroup
	var chans []<-chan error
	var mu sync.Mutex
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines := []string{"/plan status", "/plan show", fmt.Sprintf("comment %d", i), "/plan nudge snooze 1h", "/plan help"}
			c := h.eng.Enqueue(context.Background(), core.Message{Address: addr("main"), Sender: core.Person{ID: "local"}, Text: lines[i%len(lines)]})
			mu.Lock()
			chans = append(chans, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range chans {
		if err := <-c; err != nil {
			t.Error(err)
		}
	}
	if err := h.eng.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
