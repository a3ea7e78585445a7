package plan

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The product spec of a plan (docs/design.md §13): how it is written into the plan file, read
// back, and checked.

// Feature priorities and complexities.
var (
	featurePriorities   = []string{"high", "medium", "low"}
	featureComplexities = []string{"small", "medium", "large"}
)

// Headings of the spec: one section with a sub-section per part.
const (
	specHeading        = "Product spec"
	specOverview       = "Overview"
	specFeatures       = "Features"
	specUserStories    = "User stories"
	specTechStack      = "Tech stack"
	specDesign         = "Design direction"
	featureLineFormat  = "%s (priority: %s, complexity: %s)"
	featureLineExample = "`- Name (priority: high|medium|low, complexity: small|medium|large)`"
)

// featureLine matches a written feature; the name is everything before the last
// parenthesis, so a name may itself end with one.
var featureLine = regexp.MustCompile(`^(.*) \(priority: ([a-z]*), complexity: ([a-z]*)\)$`)

// writeSpec writes the spec as a section before the steps, or nothing without one.
func writeSpec(b *bytes.Buffer, sp *ProductSpec) {
	if sp == nil {
		return
	}
	fmt.Fprintf(b, "\n## %s\n", specHeading)
	writeBlock(b, "### "+specOverview, sp.Overview)
	var features []string
	for _, f := range sp.Features {
		if name := EscapeMarkdown(f.Name); name != "" {
			features = append(features, fmt.Sprintf(featureLineFormat, name, EscapeMarkdown(f.Priority), EscapeMarkdown(f.Complexity)))
		}
	}
	writeList(b, "### "+specFeatures, features)
	writeList(b, "### "+specUserStories, escapedLines(sp.UserStories))
	writeList(b, "### "+specTechStack, escapedLines(sp.TechStack))
	writeBlock(b, "### "+specDesign, sp.DesignDirection)
}

// parseFeature reads one feature entry (the text after "- ").
func parseFeature(raw string) (Feature, string) {
	m := featureLine.FindStringSubmatch(raw)
	if m == nil {
		return Feature{}, "a feature must read " + featureLineExample
	}
	f := Feature{Name: fileText(m[1], false), Priority: m[2], Complexity: m[3]}
	switch {
	case f.Name == "":
		return Feature{}, "the feature has no name; " + "write " + featureLineExample
	case f.Priority != "" && !slices.Contains(featurePriorities, f.Priority):
		return Feature{}, fmt.Sprintf("priority %q is not one of high, medium, low", f.Priority)
	case f.Complexity != "" && !slices.Contains(featureComplexities, f.Complexity):
		return Feature{}, fmt.Sprintf("complexity %q is not one of small, medium, large", f.Complexity)
	}
	return f, ""
}

// JudgeSpec checks a plan's product spec, if it has one, like Judge checks the rest:
// nil, or one problem per line worded for the model. The coordinator of a proposal calls
// it after Judge when the planner expands short goals (or whenever a spec is sent).
func JudgeSpec(b Body) error {
	sp := b.Spec
	if sp == nil {
		return nil
	}
	var j judgeNotes
	if strings.TrimSpace(sp.Overview) == "" {
		j.add("spec.overview is empty; say in a few sentences what the product is and who it is for")
	}
	j.text("spec.overview", sp.Overview)
	if len(sp.Features) == 0 {
		j.add(`spec.features is empty; list the features as [{"name": "...", "priority": "high", "complexity": "small"}]`)
	}
	j.count("spec.features", len(sp.Features))
	for i, f := range sp.Features {
		name := fmt.Sprintf("spec.features[%d]", i)
		if strings.TrimSpace(f.Name) == "" {
			j.add("%s has no name", name)
		}
		j.line(name+".name", f.Name)
		if !slices.Contains(featurePriorities, f.Priority) {
			j.add("%s.priority is %q; use one of high, medium, low", name, f.Priority)
		}
		if !slices.Contains(featureComplexities, f.Complexity) {
			j.add("%s.complexity is %q; use one of small, medium, large", name, f.Complexity)
		}
	}
	j.list("spec.user_stories entry", "spec.user_stories", sp.UserStories)
	j.list("spec.tech_stack entry", "spec.tech_stack", sp.TechStack)
	j.text("spec.design_direction", sp.DesignDirection)
	if len(j) == 0 {
		return nil
	}
	return Problems(j)
}
