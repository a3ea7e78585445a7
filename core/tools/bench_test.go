package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadFile measures one read_file call as the engine makes it: decode the
// arguments, open the workspace root, read and number the lines.
func BenchmarkReadFile(b *testing.B) {
	var src strings.Builder
	for i := range 500 {
		fmt.Fprintf(&src, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	ws := testWS(b, map[string]string{"docs/guide.md": src.String()})
	tb := New(Config{MaxOutput: 1 << 20})
	cases := []struct {
		name string
		args string
	}{
		{"whole-500-lines", `{"path":"docs/guide.md"}`},
		{"page-20-lines", `{"path":"docs/guide.md","offset":200,"limit":20}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			args := json.RawMessage(c.args)
			b.SetBytes(int64(src.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tb.Call(ctx, ws, ToolReadFile, args); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
