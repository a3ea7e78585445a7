package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkGatewayFloor is BenchmarkGatewayProcess with testdata/floorgw in plangate's
// place: a minimal gateway doing per message only the I/O plangate's guarantees require
// (the long poll, a durable inbox save before the next poll, the turn's read, the model
// call through openai-go, the turn's lazy write, bot.SendMessage, the lazy mark-sent with
// the inbox save), with the same libraries and SQLite settings. Same fakes, same metrics,
// same cases: the difference to BenchmarkGatewayProcess is plangate's own cost above the
// floor (docs/performance.md, "The floor"). The floor program reads the config.yaml
// startServeProc writes for plangate, so the harness is shared unchanged;
// PLANGATE_BENCH_CPUPROFILE is not supported here (the floor has no HTTP server):
// FLOORGW_CPUPROFILE=<file> makes the floor program profile its whole run itself.
func BenchmarkGatewayFloor(b *testing.B) { benchFloor(b) }

// BenchmarkGatewayFloorLean is the floor with what plangate does instead of the two
// naive steps the profile of the floor shows (docs/performance.md): the history kept in
// memory (only the session row is read) and the model request encoded with encoding/json
// and posted with net/http instead of through openai-go (FLOORGW_LEAN=1).
func BenchmarkGatewayFloorLean(b *testing.B) {
	b.Setenv("FLOORGW_LEAN", "1")
	benchFloor(b)
}

func benchFloor(b *testing.B) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the floor gateway with")
	}
	bin := filepath.Join(b.TempDir(), "floorgw")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "floorgw")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the floor gateway: %v\n%s", err, out)
	}
	for _, c := range []gatewayCase{
		{chats: 1, gap: gatewayGap}, {chats: 20, gap: gatewayGap}, {chats: 20},
	} {
		b.Run(c.String(), func(b *testing.B) { benchGateway(b, bin, c) })
	}
}
