package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeTour: each transcript of the README's "A short tour" is what plangate chat
// prints for its "> " lines: the first with the shipped demo, the second with the
// verified_plan scenario's config and script, as the README says.
func TestReadmeTour(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(b), "\n## A short tour\n")
	if !ok {
		t.Fatal("README.md has no A short tour section")
	}
	tour, _, _ = strings.Cut(tour, "\n## ")
	var blocks []string
	for i, part := range strings.Split(tour, "```") {
		if i%2 == 1 {
			blocks = append(blocks, strings.TrimPrefix(part, "\n"))
		}
	}
	scenarios := []string{"", filepath.Join("testdata", "chat", "verified_plan")}
	if len(blocks) < len(scenarios) {
		t.Fatalf("the tour has %d transcripts, want %d", len(blocks), len(scenarios))
	}
	for i, from := range scenarios {
		var input, want strings.Builder
		for _, line := range strings.SplitAfter(blocks[i], "\n") {
			if cmd, ok := strings.CutPrefix(line, "> "); ok {
				input.WriteString(cmd)
				continue
			}
			want.WriteString(line)
		}
		dir := t.TempDir()
		for _, f := range []string{"config.yaml", "script.yaml"} {
			if from == "" {
				continue
			}
			data, err := os.ReadFile(filepath.Join(from, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte(input.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// The chat ends its last reply with a blank line; the block ends with the reply.
		got := strings.TrimSuffix(strings.ReplaceAll(runScenario(t, dir), "$TMP/", ""), "\n")
		if got != want.String() {
			t.Errorf("the README's transcript %d is not what plangate chat prints:\n%s\n--- printed:\n%s", i+1, diffLines(want.String(), got), got)
		}
	}
}
