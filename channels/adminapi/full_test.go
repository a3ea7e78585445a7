package adminapi_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// fill sets every field of v, at every depth, to a value that is not its zero: one
// element in each slice, every pointer set, enums to a valid value. A view encoded from
// it carries every field its types have, so a field added to them that the OpenAPI
// document lacks fails TestEveryFieldIsDocumented, whether or not a request shows it.
func fill(v reflect.Value) {
	switch v.Interface().(type) {
	case core.Phase:
		v.SetString(string(core.PhaseExecuting))
		return
	case core.PlanStatus:
		v.SetString(string(core.PlanAccepted))
		return
	case plan.StepStatus:
		v.SetString(string(plan.StepCompleted))
		return
	case plan.RiskLevel:
		v.SetString(string(plan.RiskLow))
		return
	case plan.ChangeKind:
		v.SetString(string(plan.FileAdded))
		return
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 3, 1, 9, 0, 0, 5, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

func full[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem())
	return v
}

func TestEveryFieldIsDocumented(t *testing.T) {
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	p := full[core.Plan]()
	words := p // a plan whose verification is checks in words
	words.Body.Verification = plan.Words("the tests pass")
	for _, tc := range []struct {
		schema string
		v      any
	}{
		{"PlanDetail", adminapi.ToPlanDetail(p)},
		{"PlanDetail", adminapi.ToPlanDetail(words)},
		{"Session", full[adminapi.SessionJSON]()},
		{"Event", adminapi.ToEventJSON(full[core.Event]())},
		{"Dropped", full[adminapi.DroppedJSON]()},
	} {
		data, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(c.schemas[tc.schema], data); !ok {
			t.Errorf("%s with every field set does not match the document's schema: %s\n%s", tc.schema, describe(errs), data)
		}
	}
}
