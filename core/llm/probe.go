package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
)

// Probe asks the endpoint for each configured model (llm.model, then llm.plan_model when
// set), for plangate doctor: one line per model, and an error naming the first one the
// endpoint does not have or refuses, with what to fix. It costs no tokens.
func (o *OpenAI) Probe(ctx context.Context) ([]string, error) {
	names := []string{o.cfg.Model}
	if o.cfg.PlanModel != "" && o.cfg.PlanModel != o.cfg.Model {
		names = append(names, o.cfg.PlanModel)
	}
	var lines []string
	for i, name := range names {
		key := "llm.model"
		if i > 0 {
			key = "llm.plan_model"
		}
		if _, err := o.models.Get(ctx, name); err != nil {
			var apiErr *openai.Error
			switch {
			case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
				return lines, fmt.Errorf("%s %q: the model endpoint at %s does not have it (404); set %s to a model it lists", key, name, o.endpoint, key)
			case errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden):
				return lines, fmt.Errorf("%s %q: the model endpoint at %s refused the API key (%d); check llm.api_key", key, name, o.endpoint, apiErr.StatusCode)
			case errors.As(err, &apiErr):
				return lines, fmt.Errorf("%s %q: the model endpoint at %s answered %d", key, name, o.endpoint, apiErr.StatusCode)
			default:
				return lines, fmt.Errorf("%s %q: the model endpoint at %s could not be reached; check llm.base_url", key, name, o.endpoint)
			}
		}
		lines = append(lines, fmt.Sprintf("%s %s at %s", key, name, o.endpoint))
	}
	return lines, nil
}
