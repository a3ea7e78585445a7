package core

import (
	"encoding/json"
	"testing"
)

// TestExitPlanModeSchemaHasSpec: the exit_plan_mode schema the model gets offers the
// product spec plan.ParseProposal reads.
func TestExitPlanModeSchemaHasSpec(t *testing.T) {
	var schema map[string]any
	for _, s := range planToolSpecs() {
		if s.Name == ToolExitPlanMode {
			if err := json.Unmarshal(s.Parameters, &schema); err != nil {
				t.Fatalf("exit_plan_mode schema: %v", err)
			}
		}
	}
	if _, ok := schema["properties"].(map[string]any)["spec"]; !ok {
		t.Errorf("exit_plan_mode schema has no spec")
	}
}
