package coretest

import "sync"

// Parallel calls fn(0) … fn(n-1) from workers goroutines, each taking the next index when
// its last call returned, and returns the first error; after an error no new call starts.
// It is the work loop of the benchmarks that decide, commit or insert from many sessions
// at once.
func Parallel(workers, n int, fn func(i int) error) error {
	var (
		mu     sync.Mutex
		next   int
		failed error
		wg     sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= n || failed != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if failed == nil {
						failed = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return failed
}
