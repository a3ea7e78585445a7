package adminapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// A plan's detail carries its run (fingerprint, changes counted, stop) and never the
// fingerprint's packed file list; a plan with nothing recorded has no "run".
func TestPlanDetailCarriesTheRun(t *testing.T) {
	tree, err := plan.NewTree("abc123", "main", []plan.TreeFile{{Path: "a.go", Size: 3, Hash: "00"}})
	if err != nil {
		t.Fatal(err)
	}
	p := core.Plan{ID: "p1", Version: 2, Run: plan.Run{Tree: tree, Changed: &plan.Changed{Paths: []string{"a.go"}, Files: 1, Lines: 4}}}
	data, err := json.Marshal(ToPlanDetail(p))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{`"run":{"tree":{"head":"abc123","ref":"main","hash":"` + tree.Hash + `","files":1,"bytes":3}`, `"changed":{"paths":["a.go"],"files":1,"lines":4}`} {
		if !strings.Contains(s, want) {
			t.Errorf("detail %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, tree.Packed) || strings.Contains(s, "packed") {
		t.Errorf("detail carries the packed file list: %s", s)
	}
	data, _ = json.Marshal(ToPlanDetail(core.Plan{ID: "p2"}))
	if strings.Contains(string(data), `"run"`) {
		t.Errorf("a plan without a run: %s", data)
	}
}
