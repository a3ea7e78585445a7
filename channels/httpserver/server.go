// Package httpserver is plangate's one net/http server (docs/design.md §10): webhooks
// of the channels, /healthz, /readyz, /metrics and the admin API are routes on it. It
// owns what every route shares — body limits, timeouts, per-route metrics, panic
// recovery, constant-time bearer tokens, a clean stop — so a route handler only handles.
package httpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultMaxBody is http.max_body's default.
const DefaultMaxBody = 1 << 20

// Config is the http section of the configuration.
type Config struct {
	Listen    string `yaml:"listen"`     // "" = no server
	PublicURL string `yaml:"public_url"` // the address webhooks are registered with
	// AdminToken is one admin token, named DefaultAdminName; AdminTokens are named ones.
	// Neither = admin API off (404).
	AdminToken  string       `yaml:"admin_token"`
	AdminTokens []AdminToken `yaml:"admin_tokens"`
	MaxBody     int64        `yaml:"max_body"` // bytes; 0 = DefaultMaxBody
}

// AdminToken is one admin bearer token and the name of whoever holds it: the admin API
// acts as "admin:<name>", whatever a request says about itself.
type AdminToken struct {
	Name  string `yaml:"name"`
	Token string `yaml:"token"`
}

// DefaultAdminName names the single Config.AdminToken.
const DefaultAdminName = "admin"

// adminTokens are every configured token with its name.
func (c Config) adminTokens() []AdminToken {
	ts := c.AdminTokens
	if c.AdminToken != "" {
		ts = append([]AdminToken{{Name: DefaultAdminName, Token: c.AdminToken}}, ts...)
	}
	return ts
}

type adminKey struct{}

// AdminName is the name of the admin token a request to an admin route carried; "" for
// any other request.
func AdminName(ctx context.Context) string {
	n, _ := ctx.Value(adminKey{}).(string)
	return n
}

// matchAdmin returns the name of the token r carries, or "". Every token is compared,
// in constant time each, so the time taken does not tell which one nearly matched.
func matchAdmin(r *http.Request, tokens []AdminToken) string {
	name := ""
	for _, t := range tokens {
		if BearerOK(r, t.Token) && name == "" {
			name = t.Name
		}
	}
	return name
}

// Recorder is what the server counts; *metrics.Metrics satisfies it, nil records nothing.
type Recorder interface {
	HTTPRequest(route string, code int)
}

// Check is one readiness check: nil when ready, else an error saying what is wrong. Its
// text is shown on /readyz, so it must not contain a secret.
type Check func(ctx context.Context) error

// ReadyNote is a Check result that is ready and says something more than "ok", such as
// "standby for telegram polling" on a replica that is not the elected poller.
type ReadyNote string

func (n ReadyNote) Error() string { return string(n) }

// Unlisted is a Check result that is ready and leaves the check out of /readyz: a check
// with something to say only sometimes (an MCP server while it is down) adds nothing to
// the body while all is well.
var Unlisted = errors.New("ready, not listed")

// Server is the HTTP server. Register routes before Run.
type Server struct {
	cfg Config
	mux *http.ServeMux
	rec Recorder
	log *slog.Logger

	mu     sync.Mutex
	checks map[string]Check

	// Event streams (Server-Sent Events) never finish by themselves, so a stop ends them:
	// their request contexts are cancelled when Shutdown begins.
	smu      sync.Mutex
	streams  map[int]context.CancelFunc
	streamID int
	stopping bool
}

// New returns a server with /healthz and /readyz registered; it does no I/O. rec and log
// may be nil.
func New(cfg Config, rec Recorder, log *slog.Logger) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), rec: rec, log: log, checks: map[string]Check{}, streams: map[int]context.CancelFunc{}}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	return s
}

// Handle registers h for pattern (net/http's syntax, e.g. "POST /webhooks/telegram");
// the request body is limited to http.max_body.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleAdmin registers an admin API route: without an admin token the whole API is 404;
// with one, a request without `Authorization: Bearer <token>` of a configured token
// (compared in constant time) is 401 and never reaches h. h finds the token's name with
// AdminName.
func (s *Server) HandleAdmin(pattern string, h http.Handler) {
	tokens := s.cfg.adminTokens()
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(tokens) == 0 {
			http.NotFound(w, r)
			return
		}
		name := matchAdmin(r, tokens)
		if name == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="plangate"`)
			WriteError(w, http.StatusUnauthorized, "missing or wrong admin token")
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), adminKey{}, name)))
	}))
}

// AddCheck registers a readiness check under name (e.g. "store", "telegram").
func (s *Server) AddCheck(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// Handler is the server's whole handler chain, for tests with httptest.
func (s *Server) Handler() http.Handler { return s.wrap(s.mux) }

// Run serves on ln until ctx ends, then stops taking connections and lets in-flight
// requests finish for up to grace. It returns nil after a clean stop.
func (s *Server) Run(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.RegisterOnShutdown(s.endStreams)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping http server: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving http: %w", err)
	}
	return nil
}

// wrap adds what every route shares: the body limit, panic recovery, the end of event
// streams at a stop, and the request count by matched route pattern ("unmatched" for 404s
// and 405s of unknown paths, so the label's values stay bounded).
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		sw.stream = func() { sw.untrack = s.trackStream(cancel) }
		defer func() {
			if sw.untrack != nil {
				sw.untrack()
			}
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("http handler panicked", "route", r.Pattern, "panic", fmt.Sprint(p))
				if !sw.wrote {
					WriteError(sw, http.StatusInternalServerError, "internal error; details are in the gateway log")
				}
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			if s.rec != nil {
				s.rec.HTTPRequest(route, sw.code())
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// trackStream remembers the cancel of an event stream until the returned func forgets it;
// a stream that starts while the server stops is ended at once.
func (s *Server) trackStream(cancel context.CancelFunc) func() {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.stopping {
		cancel()
		return func() {}
	}
	id := s.streamID
	s.streamID++
	s.streams[id] = cancel
	return func() {
		s.smu.Lock()
		delete(s.streams, id)
		s.smu.Unlock()
	}
}

// endStreams cancels every event stream, so Shutdown can finish; other requests in flight
// run to their end.
func (s *Server) endStreams() {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.stopping = true
	for _, cancel := range s.streams {
		cancel()
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	checks := maps.Clone(s.checks)
	s.mu.Unlock()
	names := slices.Sorted(maps.Keys(checks))
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}{Ready: true, Checks: map[string]string{}}
	for _, n := range names {
		err := checks[n](ctx)
		if errors.Is(err, Unlisted) {
			continue
		}
		var note ReadyNote
		if errors.As(err, &note) {
			out.Checks[n] = oneLine(string(note))
			continue
		}
		if err != nil {
			out.Ready = false
			out.Checks[n] = oneLine(err.Error())
			continue
		}
		out.Checks[n] = "ok"
	}
	code := http.StatusOK
	if !out.Ready {
		code = http.StatusServiceUnavailable
	}
	WriteJSON(w, code, out)
}

// ReadBody reads the whole (limited) request body. On failure it has already answered:
// 413 when the body is over http.max_body, 400 otherwise. The buffer is sized by the
// request's Content-Length (up to 64 KB, so a claimed length allocates nothing large):
// a webhook's body is read into one allocation of about its size, not a 32 KB buffer
// and a copy per request.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	size := int64(bytes.MinRead)
	if n := r.ContentLength; n > 0 {
		size += min(n, 64<<10)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes (http.max_body)", tooBig.Limit))
			return nil, false
		}
		WriteError(w, http.StatusBadRequest, "reading the request body failed")
		return nil, false
	}
	return buf.Bytes(), true
}

// DecodeJSON reads the body as one JSON value into v, refusing unknown fields; on failure
// it has answered 413 or 400 with a one-line reason.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := ReadBody(w, r)
	if !ok {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		WriteError(w, http.StatusBadRequest, "malformed JSON: "+oneLine(err.Error()))
		return false
	}
	if dec.More() {
		WriteError(w, http.StatusBadRequest, "malformed JSON: more than one value in the body")
		return false
	}
	return true
}

// WriteJSON answers code with v as JSON.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ErrorJSON is the body of every error answer: the human reason and a machine-readable
// code a client branches on (ErrorCode of the status).
type ErrorJSON struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// errorCodes are the stable machine-readable codes by status; ErrorCode gives "error" for
// any other status.
var errorCodes = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "payload_too_large",
	http.StatusTooManyRequests:       "too_many_requests",
	http.StatusInternalServerError:   "internal_error",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusGatewayTimeout:        "timeout",
}

// ErrorCodes are every code ErrorCode returns, sorted.
func ErrorCodes() []string {
	return slices.Sorted(slices.Values(append(slices.Collect(maps.Values(errorCodes)), "error")))
}

// ErrorCode is the machine-readable code of an error answer with status code.
func ErrorCode(code int) string {
	if c, ok := errorCodes[code]; ok {
		return c
	}
	return "error"
}

// WriteError answers code with {"error": why, "code": ErrorCode(code)}.
func WriteError(w http.ResponseWriter, code int, why string) {
	WriteJSON(w, code, ErrorJSON{Error: why, Code: ErrorCode(code)})
}

// BearerOK reports whether r carries `Authorization: Bearer <token>`, compared in
// constant time. An empty token never matches.
func BearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && SecretEqual(got, token)
}

// SecretEqual compares two secrets in constant time (for equal lengths; the length of the
// expected secret is not treated as secret).
func SecretEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// statusWriter remembers the status code for the metrics, and tells the server when the
// response is an event stream.
type statusWriter struct {
	http.ResponseWriter
	status  int
	wrote   bool
	stream  func() // called once if the response is text/event-stream
	untrack func()
}

func (s *statusWriter) begin(code int) {
	if s.wrote {
		return
	}
	s.status, s.wrote = code, true
	if s.stream != nil && strings.HasPrefix(s.Header().Get("Content-Type"), "text/event-stream") {
		s.stream()
	}
}

func (s *statusWriter) WriteHeader(code int) {
	s.begin(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.begin(http.StatusOK)
	return s.ResponseWriter.Write(b)
}

// Flush lets server-sent events through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) code() int {
	if !s.wrote {
		return http.StatusOK
	}
	return s.status
}
