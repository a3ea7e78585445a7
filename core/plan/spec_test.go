package plan

import (
	"reflect"
	"strings"
	"testing"
)

func TestJudgeSpec(t *testing.T) {
	good := &ProductSpec{Overview: "A shared shopping list.", Features: []Feature{{Name: "Lists", Priority: "high", Complexity: "small"}},
		UserStories: []string{"As a shopper I add items"}, TechStack: []string{"Go"}, DesignDirection: "Plain and calm."}
	if err := JudgeSpec(Body{}); err != nil {
		t.Errorf("no spec: %v", err)
	}
	if err := JudgeSpec(Body{Spec: good}); err != nil {
		t.Errorf("good spec: %v", err)
	}
	bad := &ProductSpec{Features: []Feature{{Name: " ", Priority: "urgent", Complexity: ""}}, UserStories: []string{""}, TechStack: []string{"Go\u200b"}}
	err := JudgeSpec(Body{Spec: bad})
	if err == nil {
		t.Fatal("bad spec accepted")
	}
	for _, want := range []string{"spec.overview is empty", "spec.features[0] has no name", `spec.features[0].priority is "urgent"`,
		`spec.features[0].complexity is ""`, "spec.user_stories entry 1 is empty", "spec.tech_stack entry 1 contains the invisible"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems %q lack %q", err, want)
		}
	}
	if err := JudgeSpec(Body{Spec: &ProductSpec{Overview: "x"}}); err == nil || !strings.Contains(err.Error(), "spec.features is empty") {
		t.Errorf("spec without features: %v", err)
	}
}

func TestRenderSpec(t *testing.T) {
	b := Body{Title: "Shopping list", Steps: []Step{{ID: "1", Text: "Build it", Status: StepPending}},
		Spec: &ProductSpec{Overview: "A list.", Features: []Feature{{Name: "Share *lists*", Priority: "high", Complexity: "medium"}}, TechStack: []string{"Go"}}}
	file := string(renderBody(b))
	want := "\n## Product spec\n\n### Overview\n\nA list.\n\n### Features\n\n- Share \\*lists\\* (priority: high, complexity: medium)\n\n### Tech stack\n\n- Go\n\n## Steps\n"
	if !strings.Contains(file, want) {
		t.Errorf("spec section:\n%s\nwant it to contain\n%s", file, want)
	}
}

func TestParseProposalSpec(t *testing.T) {
	b, err := ParseProposal([]byte(`{"title":"T","plan":[{"step":"Build"}],"spec":{"overview":" A list. ","features":[{"name":"Lists","priority":"High","complexity":"small"}],"user_stories":["As a user", " "],"tech_stack":["Go"],"design_direction":"Calm"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &ProductSpec{Overview: "A list.", Features: []Feature{{Name: "Lists", Priority: "high", Complexity: "small"}}, UserStories: []string{"As a user"}, TechStack: []string{"Go"}, DesignDirection: "Calm"}
	if b.Spec == nil || !reflect.DeepEqual(*b.Spec, *want) {
		t.Errorf("spec = %#v, want %#v", b.Spec, want)
	}
	_, err = ParseProposal([]byte(`{"title":"T","plan":[{"step":"Build"}],"spec":{"overview":"x","features":[{"name":"a","prio":"high"}],"stack":[]}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "stack" in spec`) || !strings.Contains(err.Error(), `unknown field "prio" in spec.features[0]`) {
		t.Errorf("unknown spec fields: %v", err)
	}
}
