package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuMeter measures what a benchmark's decisions cost the machine: CPU time of this
// process (the replicas and the benchmark's driver), of the PostgreSQL server (its
// postmaster and every process it started, live or reaped), of all CPUs (/proc/stat),
// and the server's transaction ids drawn (each transaction that wrote). On 2 shared
// CPUs a rate is what the other jobs leave; the CPU time per decision is what the
// decision costs.
type cpuMeter struct {
	ctl     *pgx.Conn // nil without a server
	dataDir string    // the server's

	// The first reading.
	start          time.Time
	client, server float64 // CPU seconds
	busy, total    float64 // all CPUs, clock ticks
	xid            int64

	// Between the readings.
	clientD, serverD float64 // CPU seconds
	busyFrac         float64
	elapsedSec       float64
	xids             int64
}

// clkTck is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clkTck = 100

func newCPUMeter(b *testing.B, dsn string) *cpuMeter {
	m := &cpuMeter{}
	if dsn == "" {
		return m
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(context.Background()) })
	if err := c.QueryRow(ctx, `SHOW data_directory`).Scan(&m.dataDir); err != nil {
		b.Fatal(err)
	}
	m.ctl = c
	return m
}

func (m *cpuMeter) read(b *testing.B) (client, server, busy, total float64, xid int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	client = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	busy, total = cpuTicks(b)
	if m.ctl == nil {
		return client, 0, busy, total, 0
	}
	server = serverCPU(b, m.dataDir)
	if err := m.ctl.QueryRow(context.Background(), `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid); err != nil {
		b.Fatal(err)
	}
	return client, server, busy, total, xid
}

// Start takes the first reading, right before the measured work.
func (m *cpuMeter) Start(b *testing.B) {
	m.client, m.server, m.busy, m.total, m.xid = m.read(b)
	m.start = time.Now()
}

// Stop takes the second reading, right after it.
func (m *cpuMeter) Stop(b *testing.B) {
	m.elapsedSec = time.Since(m.start).Seconds()
	client, server, busy, total, xid := m.read(b)
	m.clientD, m.serverD = client-m.client, server-m.server
	m.busyFrac = (busy - m.busy) / (total - m.total)
	m.xids = xid - m.xid - 1 // the second reading draws one itself
}

// Report reports the CPU per decision (n of them), the cores they kept busy and how busy
// the machine's CPUs were meanwhile (every process's, the other jobs' included).
func (m *cpuMeter) Report(b *testing.B, n int) {
	fn := float64(n)
	b.ReportMetric(m.clientD/fn*1e6, "client-µs/decision")
	b.ReportMetric((m.clientD+m.serverD)/m.elapsedSec, "cores")
	b.ReportMetric(100*m.busyFrac, "machine-busy-%")
	if m.ctl != nil {
		b.ReportMetric(m.serverD/fn*1e6, "server-µs/decision")
		b.ReportMetric(float64(m.xids)/fn, "write-xacts/decision")
	}
}

// cpuTicks returns the busy (not idle, not iowait) and total clock ticks of all CPUs.
func cpuTicks(b *testing.B) (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total
}

// serverCPU is the CPU seconds of the server whose data directory is dir: its postmaster
// (with the children it reaped) and the processes it runs now.
func serverCPU(b *testing.B, dir string) float64 {
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	first, _, _ := strings.Cut(string(pidFile), "\n")
	pm, err := strconv.Atoi(first)
	if err != nil {
		b.Fatal(fmt.Errorf("reading the postmaster's pid: %w", err))
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var ticks float64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		s := string(data)
		// After "pid (comm) ": state, ppid, ... utime (14th field), stime, cutime, cstime.
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		n := 0
		switch {
		case pid == pm:
			n = 4
		case ppid == pm:
			n = 2
		}
		for i := range n {
			v, _ := strconv.ParseFloat(f[11+i], 64)
			ticks += v
		}
	}
	return ticks / clkTck
}
