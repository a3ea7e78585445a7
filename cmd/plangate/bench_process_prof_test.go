package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gatewayProfileEnv names a directory: when it is set, each measured run of
// BenchmarkGatewayProcess takes a CPU profile of the child through its
// /debug/pprof/profile and writes it there as <case>.pprof. The route needs the HTTP
// server, so the child then also listens on loopback with an admin token; without the
// variable it runs with production's default, no HTTP server.
const gatewayProfileEnv = "PLANGATE_BENCH_CPUPROFILE"

const benchAdminToken = "bench-admin-token-0123456789"

var httpListening = regexp.MustCompile(`msg="http listening" addr=(\S+)`)

// profileConfig is the config section a profiled child needs ("" when not profiling).
func profileConfig() string {
	if os.Getenv(gatewayProfileEnv) == "" {
		return ""
	}
	return "http: {listen: \"127.0.0.1:0\", admin_token: " + benchAdminToken + "}\n"
}

// profile starts a CPU profile of about the measured run's length (estimate) when
// gatewayProfileEnv is set and b.N is the real run's; the returned wait ends when it is
// written (at once when not profiling).
func (p *gatewayProc) profile(b *testing.B, estimate time.Duration) (wait func()) {
	dir := os.Getenv(gatewayProfileEnv)
	if dir == "" || b.N == 1 {
		return func() {}
	}
	base := p.httpBase(b)
	secs := max(1, int(estimate.Seconds()*0.9)) // within the run: its end is idle
	name := strings.NewReplacer("/", "_", "=", "").Replace(b.Name()) + ".pprof"
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), nil)
		req.Header.Set("Authorization", "Bearer "+benchAdminToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("profile: %s: %s", res.Status, data)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Fatalf("taking the gateway's CPU profile: %v", err)
		}
	}
}

// httpBase is the profiled child's HTTP address, from its log.
func (p *gatewayProc) httpBase(b *testing.B) string {
	for range 500 {
		if m := httpListening.FindStringSubmatch(p.logs.String()); m != nil {
			return "http://" + m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("the profiled gateway never logged its HTTP address:\n%s", p.logs)
	return ""
}
