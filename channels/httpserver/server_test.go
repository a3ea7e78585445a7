package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/metrics"
	"github.com/plangate/plangate/core/metrics/metricstest"
)

func newServer(t *testing.T, cfg httpserver.Config) (*httpserver.Server, *metrics.Metrics, *httptest.Server) {
	t.Helper()
	m := metrics.New()
	s := httpserver.New(cfg, m, nil)
	type in struct {
		Name string `json:"name"`
	}
	s.Handle("POST /echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v in
		if !httpserver.DecodeJSON(w, r, &v) {
			return
		}
		httpserver.WriteJSON(w, http.StatusOK, v)
	}))
	s.Handle("GET /panic", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	s.HandleAdmin("GET /api/v1/ping", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]bool{"pong": true})
	}))
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, m, ts
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestRoutesAndBadInput(t *testing.T) {
	_, m, ts := newServer(t, httpserver.Config{AdminToken: "s3cret-admin", MaxBody: 64})
	tests := []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
		want                     string
	}{
		{"health", "GET", "/healthz", "", nil, 200, "ok"},
		{"echo", "POST", "/echo", `{"name":"alice"}`, nil, 200, `"name": "alice"`},
		{"wrong method", "GET", "/echo", "", nil, 405, ""},
		{"unknown route", "GET", "/nope", "", nil, 404, ""},
		{"oversized body", "POST", "/echo", `{"name":"` + strings.Repeat("x", 100) + `"}`, nil, 413, "over the limit of 64 bytes"},
		{"malformed json", "POST", "/echo", `{"name":`, nil, 400, "malformed JSON"},
		{"unknown field", "POST", "/echo", `{"nom":"x"}`, nil, 400, "unknown field"},
		{"two values", "POST", "/echo", `{} {}`, nil, 400, "more than one value"},
		{"panic", "GET", "/panic", "", nil, 500, "internal error"},
		{"admin without token", "GET", "/api/v1/ping", "", nil, 401, "admin token"},
		{"admin wrong token", "GET", "/api/v1/ping", "", []string{"Authorization", "Bearer s3cret-admiN"}, 401, ""},
		{"admin not bearer", "GET", "/api/v1/ping", "", []string{"Authorization", "s3cret-admin"}, 401, ""},
		{"admin", "GET", "/api/v1/ping", "", []string{"Authorization", "Bearer s3cret-admin"}, 200, "pong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.method, ts.URL+tc.path, tc.body, tc.hdr...)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("%s %s = %d %q, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.want)
			}
			if strings.Contains(body, "s3cret") {
				t.Errorf("response echoes the admin token: %q", body)
			}
			// Errors this package answers are JSON with a code; net/http's own 404 and 405
			// of unknown routes stay its plain text.
			if tc.code >= 400 && tc.code != 404 && tc.code != 405 {
				var e httpserver.ErrorJSON
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != httpserver.ErrorCode(tc.code) || e.Error == "" {
					t.Errorf("error body %q: %+v, %v; want code %q", body, e, err, httpserver.ErrorCode(tc.code))
				}
			}
		})
	}
	for _, c := range []struct {
		route, code string
		n           float64
	}{
		{"POST /echo", "200", 1}, {"POST /echo", "413", 1}, {"POST /echo", "400", 3},
		{"GET /api/v1/ping", "401", 3}, {"GET /api/v1/ping", "200", 1}, {"GET /panic", "500", 1},
		{"unmatched", "404", 1}, {"GET /healthz", "200", 1},
	} {
		if got := value(t, m, "plangate_http_requests_total", "route", c.route, "code", c.code); got != c.n {
			t.Errorf("plangate_http_requests_total{route=%q,code=%q} = %v, want %v", c.route, c.code, got, c.n)
		}
	}
}

// TestAdminTokensNamed: each named token reaches an admin route with its own name
// (the single admin_token as "admin"); a token of neither is 401 and reaches nothing.
func TestAdminTokensNamed(t *testing.T) {
	s := httpserver.New(httpserver.Config{AdminTokens: []httpserver.AdminToken{
		{Name: "ops1", Token: "ops1-secret-0123456789"}, {Name: "ops2", Token: "ops2-secret-0123456789"}}}, nil, nil)
	s.HandleAdmin("GET /who", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(httpserver.AdminName(r.Context())))
	}))
	single := httpserver.New(httpserver.Config{AdminToken: "only-secret-0123456789"}, nil, nil)
	single.HandleAdmin("GET /who", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(httpserver.AdminName(r.Context())))
	}))
	multi, one := httptest.NewServer(s.Handler()), httptest.NewServer(single.Handler())
	t.Cleanup(multi.Close)
	t.Cleanup(one.Close)
	for _, c := range []struct {
		url, token, want string
		code             int
	}{
		{multi.URL, "ops1-secret-0123456789", "ops1", 200},
		{multi.URL, "ops2-secret-0123456789", "ops2", 200},
		{multi.URL, "ops3-secret-0123456789", "", 401},
		{multi.URL, "only-secret-0123456789", "", 401},
		{one.URL, "only-secret-0123456789", httpserver.DefaultAdminName, 200},
	} {
		code, body := do(t, "GET", c.url+"/who", "", "Authorization", "Bearer "+c.token)
		if code != c.code || (code == 200 && body != c.want) {
			t.Errorf("token %s: %d %q, want %d %q", c.token[:4], code, body, c.code, c.want)
		}
	}
}

// value reads one sample of a counter or gauge from the registry; 0 when absent.
func value(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	return metricstest.Sample(t, m, name, labels...)
}

func TestAdminAPIIsNotFoundWithoutToken(t *testing.T) {
	_, _, ts := newServer(t, httpserver.Config{})
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer "}, {"Authorization", "Bearer x"}} {
		if code, _ := do(t, "GET", ts.URL+"/api/v1/ping", "", hdr...); code != 404 {
			t.Errorf("admin API without a configured token, header %v: %d, want 404", hdr, code)
		}
	}
}

func TestReadyz(t *testing.T) {
	s, _, ts := newServer(t, httpserver.Config{})
	s.AddCheck("store", func(context.Context) error { return nil })
	code, body := do(t, "GET", ts.URL+"/readyz", "")
	var got struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || !got.Ready || got.Checks["store"] != "ok" {
		t.Fatalf("ready: %d %s %v", code, body, err)
	}
	s.AddCheck("telegram", func(context.Context) error { return errors.New("not connected:\n getUpdates failed") })
	code, body = do(t, "GET", ts.URL+"/readyz", "")
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 503 || got.Ready || got.Checks["telegram"] != "not connected: getUpdates failed" || got.Checks["store"] != "ok" {
		t.Fatalf("not ready: %d %s %v", code, body, err)
	}
}

// TestReadyzUnlisted: a check that answers Unlisted is left out of the body, and one that
// answers a ReadyNote is shown without making the server unready.
func TestReadyzUnlisted(t *testing.T) {
	s, _, ts := newServer(t, httpserver.Config{})
	s.AddCheck("store", func(context.Context) error { return nil })
	var quiet atomic.Bool
	quiet.Store(true)
	s.AddCheck("mcp:fs", func(context.Context) error {
		if quiet.Load() {
			return httpserver.Unlisted
		}
		return httpserver.ReadyNote("down since then")
	})
	if code, body := do(t, "GET", ts.URL+"/readyz", ""); code != 200 || body != "{\n  \"ready\": true,\n  \"checks\": {\n    \"store\": \"ok\"\n  }\n}\n" {
		t.Fatalf("with an unlisted check: %d %q", code, body)
	}
	quiet.Store(false)
	if code, body := do(t, "GET", ts.URL+"/readyz", ""); code != 200 || !strings.Contains(body, `"mcp:fs": "down since then"`) || !strings.Contains(body, `"ready": true`) {
		t.Fatalf("with a note: %d %s", code, body)
	}
}

// A stop lets a request that is in flight finish, then Run returns nil.
func TestRunStopsCleanly(t *testing.T) {
	s := httpserver.New(httpserver.Config{}, nil, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	s.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = w.Write([]byte("finished"))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, time.Minute) }()
	got := make(chan string, 1)
	go func() {
		res, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- string(b)
	}()
	<-entered
	stop()
	close(release)
	if body := <-got; body != "finished" {
		t.Fatalf("in-flight request: %q", body)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// An event stream never ends by itself: a stop cancels its request context, so Run still
// returns nil, while an ordinary request in flight runs to its end.
func TestRunEndsEventStreams(t *testing.T) {
	s := httpserver.New(httpserver.Config{}, nil, nil)
	streaming, entered, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.Handle("GET /events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(": hello\n\n"))
		http.NewResponseController(w).Flush()
		close(streaming)
		<-r.Context().Done()
	}))
	s.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		if r.Context().Err() != nil {
			t.Error("an ordinary request's context was cancelled by the stop")
		}
		_, _ = w.Write([]byte("finished"))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln, time.Minute) }()
	base := "http://" + ln.Addr().String()

	streamEnded := make(chan error, 1)
	go func() {
		res, err := http.Get(base + "/events")
		if err != nil {
			streamEnded <- err
			return
		}
		_, err = io.ReadAll(res.Body) // returns when the server ends the stream
		res.Body.Close()
		streamEnded <- err
	}()
	slow := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		slow <- string(b)
	}()
	<-streaming
	<-entered
	stop()
	if err := <-streamEnded; err != nil {
		t.Errorf("the stream did not end cleanly: %v", err)
	}
	close(release)
	if body := <-slow; body != "finished" {
		t.Errorf("in-flight request: %q", body)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// ReadBody reads a body whole whatever its Content-Length says it is: over the 64 KB its
// first buffer is sized to, unknown (chunked), or exact.
func TestReadBodyWhole(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		name   string
		body   string
		length int64
	}{{"small", `{"update_id":1}`, 15}, {"over 64 KB", big, int64(len(big))}, {"unknown length", big, -1}} {
		r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(tc.body))
		r.ContentLength = tc.length
		w := httptest.NewRecorder()
		got, ok := httpserver.ReadBody(w, r)
		if !ok || string(got) != tc.body {
			t.Errorf("%s: read %d bytes (ok %v, answered %d), want %d", tc.name, len(got), ok, w.Code, len(tc.body))
		}
	}
}

func TestErrorCodes(t *testing.T) {
	for status, want := range map[int]string{400: "bad_request", 401: "unauthorized", 404: "not_found", 409: "conflict",
		413: "payload_too_large", 500: "internal_error", 504: "timeout", 418: "error"} {
		if got := httpserver.ErrorCode(status); got != want {
			t.Errorf("ErrorCode(%d) = %q, want %q", status, got, want)
		}
	}
	codes := httpserver.ErrorCodes()
	if !slices.IsSorted(codes) || !slices.Contains(codes, "error") || !slices.Contains(codes, "conflict") || len(codes) != 12 {
		t.Fatalf("ErrorCodes() = %q", codes)
	}
}
