package channels

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/plangate/plangate/core/plan"
)

func TestFetchPlanFile(t *testing.T) {
	ctx := context.Background()
	opened := 0
	serve := func(s string) func(context.Context) (io.ReadCloser, error) {
		return func(context.Context) (io.ReadCloser, error) {
			opened++
			return io.NopCloser(strings.NewReader(s)), nil
		}
	}
	big := strings.Repeat("x", plan.MaxFileBytes+1)
	for _, tc := range []struct {
		name, file, mime, content string
		declared                  int64
		wantData                  string
		wantSize                  int64
		wantOpen                  bool
	}{
		{"text", "plan.md", "", "# Plan\n", 7, "# Plan\n", 0, true},
		{"text by type", "plan", "text/plain", "# Plan\n", 0, "# Plan\n", 0, true},
		{"announced too big", "plan.md", "", "# Plan\n", plan.MaxFileBytes + 1, "", plan.MaxFileBytes + 1, false},
		{"bigger than announced", "plan.md", "", big, 10, "", int64(len(big)), true},
		{"not text", "shot.png", "image/png", "\x89PNG", 4, "", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opened = 0
			f, err := FetchPlanFile(ctx, tc.file, tc.mime, tc.declared, serve(tc.content))
			if err != nil {
				t.Fatal(err)
			}
			if string(f.Data) != tc.wantData || f.Size != tc.wantSize || (opened > 0) != tc.wantOpen || f.Name != tc.file {
				t.Errorf("got %q size %d opened %d; want %q size %d opened %v", f.Data, f.Size, opened, tc.wantData, tc.wantSize, tc.wantOpen)
			}
		})
	}
	_, err := FetchPlanFile(ctx, "plan.md", "", 0, func(context.Context) (io.ReadCloser, error) { return nil, errors.New("gone") })
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a failed download: %v", err)
	}
}

func TestEditCommand(t *testing.T) {
	for text, want := range map[string]string{"": "/plan edit", "/plan edit": "/plan edit", "thanks": "/plan edit", "/plan@bot edit": "/plan@bot edit"} {
		if got := EditCommand(text, "bot"); got != want {
			t.Errorf("EditCommand(%q) = %q, want %q", text, got, want)
		}
	}
	if IsEditCommand("/plan accept", "") || !IsEditCommand("/PLAN EDIT x.md", "") {
		t.Error("IsEditCommand")
	}
}
