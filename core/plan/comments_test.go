package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseAnswered(t *testing.T) {
	cases := []struct {
		name, args string
		want       []string
		err        string
	}{
		{"absent", `{"title":"T"}`, nil, ""},
		{"trimmed, repeats dropped", `{"answered_comments":[" c1","c2","c1",""]}`, []string{"c1", "c2"}, ""},
		{"not a list", `{"answered_comments":"c1"}`, nil, "must be a list of comment ids"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAnswered(json.RawMessage(tc.args))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseAnswered = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// ParseProposal accepts answered_comments as a known field and leaves it out of the body.
func TestParseProposalKnowsAnsweredComments(t *testing.T) {
	b, err := ParseProposal(json.RawMessage(`{"title":"T","plan":[{"step":"a"}],"answered_comments":["c1"]}`))
	if err != nil {
		t.Fatalf("ParseProposal: %v", err)
	}
	if Hash(b) != Hash(Body{Title: "T", Steps: []Step{{ID: "1", Text: "a", Status: StepPending}}}) {
		t.Errorf("answered_comments changed the body: %+v", b)
	}
}

func TestJudgeAnswered(t *testing.T) {
	sent := []Comment{{ID: "c1"}, {ID: "c2"}}
	cases := []struct {
		name    string
		claimed []string
		sent    []Comment
		want    []string // substrings of the error; none = accepted
	}{
		{"none claimed", nil, sent, nil},
		{"known ids", []string{"c2", "c1"}, sent, nil},
		{"unknown id", []string{"c1", "c9"}, sent, []string{`answered_comments names "c9", which is not a comment sent to you; the comments are c1, c2`}},
		{"nothing was sent", []string{"c1"}, nil, []string{`names "c1", but no comments were sent to you`}},
		{"hostile flood is bounded", slices.Repeat([]string{strings.Repeat("x", 100)}, 500), sent, []string{`"xxxx`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := JudgeAnswered(tc.claimed, tc.sent)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("JudgeAnswered = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("JudgeAnswered accepted unknown ids")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(err.Error()); n > 20*600 {
				t.Errorf("error is %d bytes long", n)
			}
		})
	}
}

func TestCommentsInTheDiff(t *testing.T) {
	cs := []Comment{{ID: "c1", Steps: []int{2}, Text: "use the v2 API"}, {ID: "c2", Steps: []int{2, 4}, Text: "# share one client"}}
	d := Compare(Body{Steps: stepsOf("a", "b")}, Body{Steps: stepsOf("a", "b")})
	d.From = 1
	if !d.Empty() || d.Summary() != "" {
		t.Fatalf("same plan: %+v %q", d, d.Summary())
	}
	d.Comments = Answers(cs, []string{"c1"})
	if d.Empty() {
		t.Error("a diff with comments is empty")
	}
	if got, want := d.Summary(), "Changes from v1: comment c1 on step 2 answered · comment c2 on steps 2, 4 not answered"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	md := d.Markdown()
	for _, w := range []string{"- Comment c1 on step 2 (answered): use the v2 API\n", "- Comment c2 on steps 2, 4 (not answered): \\# share one client\n"} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q:\n%s", w, md)
		}
	}
	d.Details = true
	if got := d.Summary(); !strings.HasPrefix(got, "Changes from v1: same steps; only the wording changed · comment c1") {
		t.Errorf("Summary with details = %q", got)
	}
}

func TestRunWithCommentsIsNotZero(t *testing.T) {
	if !(Run{}).IsZero() {
		t.Error("empty run is not zero")
	}
	if (Run{Comments: []Comment{{ID: "c1", At: time.Unix(0, 0)}}}).IsZero() {
		t.Error("a run with comments is zero: the store would drop them")
	}
}
