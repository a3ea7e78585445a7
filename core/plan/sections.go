package plan

// The sections of a plan file that plangate writes about a version rather than the
// plan's body: who approved it and how it was decided. ParseMarkdown skips them.

// approvalLines lists who approved a version, one line per approval.
func approvalLines(approvals []Approval) []string {
	lines := make([]string, 0, len(approvals))
	for _, a := range approvals {
		line := personLabel(a.By, a.ByName)
		if !a.At.IsZero() {
			line += " at " + a.At.UTC().Format("2006-01-02 15:04 UTC")
		}
		lines = append(lines, line)
	}
	return lines
}

// personLabel is "Name (id)", or the id alone when the name adds nothing, escaped.
func personLabel(id, name string) string {
	who := EscapeMarkdown(id)
	if n := EscapeMarkdown(name); n != "" && n != who {
		who = n + " (" + who + ")"
	}
	return who
}

func decisionLines(d Decision) []string {
	lines := []string{"Outcome: " + EscapeMarkdown(d.Outcome)}
	if who := personLabel(d.By, d.ByName); who != "" {
		lines = append(lines, "By: "+who)
	}
	if !d.At.IsZero() {
		lines = append(lines, "At: "+d.At.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if ch := EscapeMarkdown(d.Channel); ch != "" {
		lines = append(lines, "Channel: "+ch)
	}
	if fb := EscapeMarkdown(d.Feedback); fb != "" {
		lines = append(lines, "Feedback: "+fb)
	}
	return lines
}
