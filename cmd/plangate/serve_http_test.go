package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/store"
)

// runStub runs until its context ends or fail is closed; ready is what Ready says.
type runStub struct {
	name    string
	started chan struct{}
	fail    chan struct{}
}

func (s *runStub) Name() string { return s.name }
func (s *runStub) Run(ctx context.Context, _ channels.Handler) error {
	close(s.started)
	select {
	case <-ctx.Done():
		return nil
	case <-s.fail:
		return errors.New("connection lost")
	}
}
func (s *runStub) Send(context.Context, core.Reply) (string, error) { return "", nil }

// readyRunStub also says whether it is connected.
type readyRunStub struct {
	runStub
	err error
}

func (r *readyRunStub) Ready() error { return r.err }

func newRunStub(name string) *runStub {
	return &runStub{name: name, started: make(chan struct{}), fail: make(chan struct{})}
}

// testWeb builds the serve command's HTTP server on a fresh store, without listening.
func testWeb(t *testing.T, token string) (*webServer, *httptest.Server) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "plangate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := defaultConfig()
	cfg.HTTP = HTTPConfig{Listen: "127.0.0.1:0", AdminToken: token, MaxBody: 1 << 20}
	w, err := listenHTTP(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	ts := httptest.NewServer(w.srv.Handler())
	t.Cleanup(ts.Close)
	return w, ts
}

func get(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
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
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

type readyJSON struct {
	Ready  bool              `json:"ready"`
	Checks map[string]string `json:"checks"`
}

func readyz(t *testing.T, base string) (int, readyJSON) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	var r readyJSON
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("readyz body %q: %v", body, err)
	}
	return code, r
}

// TestReadyzFollowsTheChannels: /readyz names each channel and goes 503 before it runs,
// after it fails and when the adapter says it is not connected.
func TestReadyzFollowsTheChannels(t *testing.T) {
	w, ts := testWeb(t, "")
	tg, sl := newRunStub("telegram"), &readyRunStub{runStub: *newRunStub("slack"), err: errors.New("socket mode disconnected")}
	running := w.track([]channels.Channel{tg, sl})

	code, r := readyz(t, ts.URL)
	if code != 503 || r.Ready || r.Checks["store"] != "ok" || r.Checks["telegram"] != "not started yet" || r.Checks["slack"] != "not started yet" {
		t.Fatalf("before start: %d %+v", code, r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- channels.NewHub(nil, running...).Run(ctx, channels.HandlerFunc(nil)) }()
	<-tg.started
	<-sl.started
	code, r = readyz(t, ts.URL)
	if code != 503 || r.Checks["telegram"] != "ok" || r.Checks["slack"] != "socket mode disconnected" {
		t.Fatalf("running, slack disconnected: %d %+v", code, r)
	}
	sl.err = nil // the stub is only read by the check, after this write
	if code, r = readyz(t, ts.URL); code != 200 || !r.Ready || len(r.Checks) != 3 {
		t.Fatalf("all connected: %d %+v", code, r)
	}

	close(tg.fail)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "telegram") {
		t.Fatalf("hub: %v", err)
	}
	code, r = readyz(t, ts.URL)
	if code != 503 || r.Checks["telegram"] != "failed; the gateway log says why" || r.Checks["slack"] != "stopped" {
		t.Fatalf("after a failure: %d %+v", code, r)
	}
	cancel()
}

// routesStub receives over HTTP: its route is mounted by track.
type routesStub struct{ runStub }

func (r *routesStub) RegisterHTTP(srv *httpserver.Server) {
	srv.Handle("POST /webhooks/stub", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]string{"got": "it"})
	}))
}

func TestTrackMountsChannelRoutes(t *testing.T) {
	w, ts := testWeb(t, "")
	w.track([]channels.Channel{&routesStub{*newRunStub("stub")}, newRunStub("plain")})
	res, err := http.Post(ts.URL+"/webhooks/stub", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"got": "it"`) {
		t.Errorf("the channel's route: %d %s", res.StatusCode, b)
	}
	if code, _ := get(t, ts.URL+"/webhooks/stub"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET on the channel's POST route: %d, want 405", code)
	}
	if code, r := readyz(t, ts.URL); code != 503 || r.Checks["stub"] != "not started yet" || r.Checks["plain"] != "not started yet" {
		t.Errorf("readyz: %d %+v", code, r)
	}
}

// TestPprofNeedsTheAdminToken: /debug/pprof/ is an admin route, 404 without a token
// configured and 401 without the right bearer token; /metrics is open.
func TestPprofNeedsTheAdminToken(t *testing.T) {
	const token = "pprof-admin-token-0123456789"
	_, ts := testWeb(t, token)
	for _, tc := range []struct {
		path, auth string
		code       int
		want       string
	}{
		{"/debug/pprof/", "", 401, "admin token"},
		{"/debug/pprof/", "Bearer wrong-token-0123456789", 401, ""},
		{"/debug/pprof/", "Bearer " + token, 200, "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "Bearer " + token, 200, "goroutine profile"},
		{"/debug/pprof/cmdline", "", 401, ""},
		{"/metrics", "", 200, "go_goroutines"},
	} {
		code, body := get(t, ts.URL+tc.path, "Authorization", tc.auth)
		if code != tc.code || !strings.Contains(body, tc.want) || strings.Contains(body, token) {
			t.Errorf("GET %s (%q): %d %.200s", tc.path, tc.auth, code, body)
		}
	}
	code, body := get(t, ts.URL+"/metrics")
	if code != 200 || !strings.Contains(body, `plangate_http_requests_total{code="401",route="GET /debug/pprof/"} 2`) {
		t.Errorf("metrics do not count the refused requests:\n%s", body)
	}

	_, off := testWeb(t, "")
	if code, _ := get(t, off.URL+"/debug/pprof/", "Authorization", "Bearer "+token); code != 404 {
		t.Errorf("pprof without an admin token configured: %d, want 404", code)
	}
}

func TestOpenApprovalWarning(t *testing.T) {
	cfg := defaultConfig()
	if w := cfg.openApprovalWarning(); w != "" {
		t.Errorf("terminal only: %q", w)
	}
	cfg.Channels.Telegram.Enabled, cfg.Channels.Discord.Enabled = true, true
	want := "access.approvers is empty: on telegram, discord the first person who writes in each chat owns its session and decides on its plans; list who may decide in access.approvers (e.g. telegram:123456789)"
	if w := cfg.openApprovalWarning(); w != want {
		t.Errorf("warning\n got %q\nwant %q", w, want)
	}
	cfg.Access.Approvers = []string{"telegram:1"}
	if w := cfg.openApprovalWarning(); w != "" {
		t.Errorf("with approvers: %q", w)
	}

	// config check shows the warning too.
	code, out, _ := cli(t, "", "config", "check", "--config", writeConfig(t, "llm: {provider: script, script: \"${SCRIPT}\"}\nchannels: {slack: {enabled: true, bot_token: b, app_token: a}}\n"))
	if code != 0 || !strings.Contains(out, "\nwarning: access.approvers is empty: on slack the first person") || !strings.HasSuffix(out, "config ok\n") {
		t.Errorf("config check: %d\n%s", code, out)
	}
}

// TestServePortInUse: the HTTP port is bound before any channel connects, so a port in use
// stops serve at once with the key named, and the platform is never called.
func TestServePortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "unexpected", http.StatusTeapot)
	}))
	defer api.Close()
	cfg := writeConfig(t, fmt.Sprintf(`llm: {provider: script, script: "${SCRIPT}"}
channels:
  telegram: {enabled: true, token: "1:x", api_url: %q}
http: {listen: %q}
`, api.URL, busy.Addr().String()))
	code, _, errOut := cli(t, "", "serve", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "listening on http.listen "+busy.Addr().String()) {
		t.Errorf("serve on a busy port: exit %d\n%s", code, errOut)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the platform was called %d times before the port was found busy", n)
	}
}

// TestAdminSenderOnlyWithToken: the engine's replies go through the admin API's tap only
// when the API is on; without http.admin_token (or without a server) they go straight to
// the channels and no API is mounted.
func TestAdminSenderOnlyWithToken(t *testing.T) {
	out := channels.NewHub(nil)
	var none *webServer
	if none.adminSender(out) != core.Sender(out) {
		t.Fatal("no HTTP server, yet the replies are tapped")
	}
	off := &webServer{}
	if off.adminSender(out) != core.Sender(out) || off.tap != nil {
		t.Fatal("no admin token, yet the replies are tapped")
	}
	on := &webServer{adminOn: true}
	if got := on.adminSender(out); got == core.Sender(out) || got != core.Sender(on.tap) {
		t.Fatalf("admin token set, but the engine's Sender is %T", got)
	}
}
