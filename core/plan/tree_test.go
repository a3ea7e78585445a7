package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
)

func sampleTree(tb testing.TB, n int, salt string) *Tree {
	tb.Helper()
	files := make([]TreeFile, n)
	for i := range files {
		sum := sha256.Sum256([]byte(fmt.Sprint(salt, i)))
		files[i] = TreeFile{Path: fmt.Sprintf("pkg%02d/file%04d.go", i%100, i), Size: int64(2000 + i), Hash: hex.EncodeToString(sum[:16])}
	}
	t, err := NewTree("", "", files)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// A tree survives JSON (the plans.run column) and compares by what changed.
func TestTreeRoundTripAndCompare(t *testing.T) {
	a := sampleTree(t, 50, "a")
	data, err := json.Marshal(Run{Tree: a})
	if err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if c, err := CompareTrees(a, back.Tree); err != nil || !c.Empty() {
		t.Fatalf("round trip: %+v %v", c, err)
	}
	files, _ := a.Files()
	files[3].Hash = "0"
	files = append(files[:10], files[11:]...)
	b, err := NewTree("", "", files)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompareTrees(a, b)
	if err != nil || c.Words(5) != "pkg03/file0003.go changed and pkg10/file0010.go removed" {
		t.Fatalf("compare: %q %v", c.Words(5), err)
	}
	if c, _ := CompareTrees(nil, b); !c.Empty() {
		t.Fatal("a version without a fingerprint compares as changed")
	}
	if _, err := (&Tree{Count: 1, Packed: "not base64!"}).Files(); err == nil {
		t.Fatal("a corrupt list unpacked")
	}
	// The list is not in the JSON: comparing with a tree whose list was not put back fails
	// rather than reporting every file as added.
	if _, err := CompareTrees(back.Tree, b); err == nil {
		t.Fatal("compared a tree without its file list")
	}
}

// BenchmarkDecodeRun decodes a run holding two fingerprints of 2,000 files (proposal and
// last call), as every read of an executing plan's row does: their file lists are kept
// apart, so it stays small.
func BenchmarkDecodeRun(b *testing.B) {
	r := Run{Tree: sampleTree(b, 2000, "a"), Changed: &Changed{Paths: []string{"a"}, Files: 1, Last: sampleTree(b, 2000, "b")}}
	data, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data)), "json-bytes")
	for b.Loop() {
		var back Run
		if err := json.Unmarshal(data, &back); err != nil {
			b.Fatal(err)
		}
	}
}
