package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/store"
	"github.com/plangate/plangate/store/pgtest"
)

// BenchmarkReplicaDecisionsLatency is BenchmarkReplicaDecisions/postgres/replicas=1 with
// the database a network hop away: a proxy on a unix socket holds every chunk for the
// given one-way delay (0.25 ms: a round trip of 0.5 ms, a database in the same data
// centre). On the server's own socket a round trip costs tens of µs, so what a decision's
// round trips cost only shows here.
func BenchmarkReplicaDecisionsLatency(b *testing.B) {
	for _, oneWay := range []time.Duration{250 * time.Microsecond} {
		b.Run(fmt.Sprintf("oneway=%v", oneWay), func(b *testing.B) {
			target := delayProxy(b, pgtest.Schema(b), oneWay)
			engs := []*engine.Engine{benchEngine(b, store.DriverPostgres, target)}
			b.ReportMetric(replicaDecisions(b, engs, 8, newCPUMeter(b, "")), "decisions/s")
		})
	}
}

// delayProxy listens on a unix socket in a new directory, forwards every connection to
// the server of dsn with each chunk held for d, and returns dsn pointed at the proxy.
func delayProxy(b *testing.B, dsn string, d time.Duration) string {
	host := strings.TrimPrefix(strings.Fields(dsn)[0], "host=")
	dir := b.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", filepath.Join(host, ".s.PGSQL.5432"))
			if err != nil {
				c.Close()
				continue
			}
			go holdEach(up, c, d)
			go holdEach(c, up, d)
		}
	}()
	return strings.Replace(dsn, "host="+host, "host="+dir, 1)
}

// holdEach copies src to dst, each chunk d after it was read, until either side ends.
func holdEach(dst, src net.Conn, d time.Duration) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(d)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
