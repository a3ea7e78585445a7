package core

import (
	"fmt"
	"strings"

	"github.com/plangate/plangate/core/plan"
)

// specLineFeatures is how many features a proposal's chat message names; the plan file
// has them all.
const specLineFeatures = 5

// specLine is a proposal's line about its product spec: how many features, the first
// few with their priority and complexity, e.g. "Product spec: 2 features — Add a todo
// (high, small) · Due dates (low, medium)". "" without a spec.
func specLine(sp *plan.ProductSpec) string {
	if sp == nil {
		return ""
	}
	n := len(sp.Features)
	var b strings.Builder
	fmt.Fprintf(&b, "Product spec: %d %s", n, plural(n, "feature", "features"))
	for i, f := range sp.Features[:min(n, specLineFeatures)] {
		sep := " · "
		if i == 0 {
			sep = " — "
		}
		fmt.Fprintf(&b, "%s%s (%s, %s)", sep, oneLine(f.Name), f.Priority, f.Complexity)
	}
	if n > specLineFeatures {
		b.WriteString(" · …")
	}
	return b.String()
}
