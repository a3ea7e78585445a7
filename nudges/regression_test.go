package nudges_test

// Regression tests for defects found in review. Each comment describes the defect; the
// test fails if it comes back.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/plangate/plangate/nudges"
)

// After downtime, every one-shot reminder of one plan that is still within the grace period
// fires in the same round: the person gets several identical "plan v1 has waited" messages
// at once.
func TestRegressionOneShotBurstAfterDowntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := openStore(t)
		t0 := time.Now()
		seed(t, st, "s1", remindAt(t0, 10*time.Minute), remindAt(t0, 30*time.Minute), remindAt(t0, time.Hour))
		time.Sleep(65 * time.Minute) // down from t0 to +65m
		d := &fakeDeliverer{}
		stop := start(t, nudges.New(st, d, nudges.Config{Grace: 2 * time.Hour}, testLogger(t)))
		synctest.Wait()
		stop()
		got := d.delivered()
		t.Logf("delivered at start-up: %v", describe(got, t0))
		if len(got) > 1 {
			t.Fatalf("%d reminders for the same session delivered in one burst after downtime", len(got))
		}
	})
}
