package channeltest

import (
	"net/http"
	"sync"
	"time"
)

// StampHeader names the request header a benchmark sets to learn from Stamps when the
// server had its answer out.
const StampHeader = "X-Bench-Stamp"

// Stamps notes when a server had written the answer to each request that carries
// StampHeader: when it first flushed, or when the handler returned (net/http then sends
// what is buffered), just before the bytes are written. Benchmarks whose client runs in
// the same process use it to tell the server's time to the 200, what a platform sees,
// from the time the client's goroutines take to be scheduled and read it.
type Stamps struct {
	mu sync.Mutex
	at map[string]time.Time
}

// Wrap returns h noting the stamps.
func (s *Stamps) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(StampHeader)
		if id == "" {
			h.ServeHTTP(w, r)
			return
		}
		sw := &stampingWriter{ResponseWriter: w, note: func() { s.note(id) }}
		h.ServeHTTP(sw, r)
		sw.once.Do(sw.note)
	})
}

// Take returns and forgets the stamp of request id.
func (s *Stamps) Take(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[id]
	delete(s.at, id)
	return at, ok
}

func (s *Stamps) note(id string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]time.Time{}
	}
	s.at[id] = now
}

type stampingWriter struct {
	http.ResponseWriter
	once sync.Once
	note func()
}

// Flush notes the stamp first: once flushed, a complete answer may reach the client
// before Flush returns, and the client then asks for the stamp.
func (w *stampingWriter) Flush() {
	w.once.Do(w.note)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// StampWriter is a ResponseWriter for a handler called without the network: it keeps the
// first status written (Code) and when (At), and discards the body.
type StampWriter struct {
	header http.Header
	Code   int
	At     time.Time
}

// NewStampWriter returns an empty StampWriter.
func NewStampWriter() *StampWriter { return &StampWriter{header: http.Header{}} }

// Header implements http.ResponseWriter.
func (w *StampWriter) Header() http.Header { return w.header }

// Write implements http.ResponseWriter.
func (w *StampWriter) Write(p []byte) (int, error) {
	if w.Code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return len(p), nil
}

// WriteHeader implements http.ResponseWriter.
func (w *StampWriter) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code, w.At = code, time.Now()
	}
}

// Flush implements http.Flusher.
func (w *StampWriter) Flush() {}
