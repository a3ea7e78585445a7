package plan

import (
	"strings"
	"testing"
)

// Text in a report comes from the model (step texts, commands, paths) or the workspace
// (file names): it is escaped, so it opens no heading, list or mention, and a report
// without changes says "None." where a reader looks.
func TestReportMarkdownEscapesAndSaysNone(t *testing.T) {
	code := 1
	r := Report{Outcome: string(StopWorkspaceDrifted), Measured: true,
		Steps: []ReportStep{{Step: "1", Text: "# Owned @everyone", Status: StepInProgress,
			Files:    []FileLines{{Path: "## x.md", Kind: FileAdded, Added: 1, Counted: true}},
			Commands: []ReportCommand{{Command: "sh -c echo <@123>", ExitCode: &code}}}},
		Files:   []FileLines{{Path: "## x.md", Kind: FileAdded, Added: 1, Counted: true}, {Path: "img.png", Kind: FileChanged}},
		NotDone: []NotDone{{Step: "1", Text: "# Owned @everyone", Status: StepInProgress, Reason: "stopped"}}, Outside: []string{"- b.txt"}}
	md := string(r.Markdown(3, "# Title @here"))
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "# ") && line != `# Report: plan v3 — \# Title @`+"\u200b"+`here` {
			t.Errorf("a heading from model text: %q", line)
		}
		if strings.Contains(line, "@everyone") || strings.Contains(line, "<@123>") || strings.HasPrefix(line, "## x.md") || strings.HasPrefix(line, "- - b.txt") {
			t.Errorf("unescaped: %q", line)
		}
	}
	for _, want := range []string{"Stopped at 0001-01-01 00:00:00 UTC: workspace drifted.", "- img.png: lines not counted\n",
		"In all: 2 files, +1 −0 lines.", "## Verification\n\nNone: the plan names no checks plangate runs.\n", "— exit code 1\n",
		"- before (accepted): not recorded\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if got := r.Summary(); got != "2 files changed (+1 −0), 1 command, 1 step not done, 1 file changed outside the plan" {
		t.Errorf("summary %q", got)
	}
	empty := Report{Outcome: "completed", Measured: true, Files: []FileLines{}, NotDone: []NotDone{}, Outside: []string{}}
	md = string(empty.Markdown(1, "T"))
	for _, want := range []string{"## Files changed\n\nNone.\n", "## Commands run\n\nNone.\n", "## Not done\n\nNone.\n", "## Outside the accepted version\n\nNone.\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if got := (Report{}).Summary(); got != "files not measured, 0 commands, nothing outside the plan" {
		t.Errorf("summary of an unmeasured report %q", got)
	}
	if got := ReportFileName("plan-2026-11-30-docs-v2.md"); got != "plan-2026-11-30-docs-v2-report.md" {
		t.Errorf("file name %q", got)
	}
}
