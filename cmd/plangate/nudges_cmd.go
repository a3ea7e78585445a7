package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/plangate/plangate/core"
)

// nudgeJSON is one schedule in `nudges list --json` (docs/design.md §9).
type nudgeJSON struct {
	ID         int64            `json:"id"`
	SessionID  string           `json:"session_id"`
	PlanID     string           `json:"plan_id"` // "" for a pending question
	Kind       core.NudgeKind   `json:"kind"`
	Action     core.NudgeAction `json:"action"`
	Spec       string           `json:"spec"`
	NextFireAt *string          `json:"next_fire_at"` // null once nothing is due any more
	Fired      int              `json:"fired"`
	Missed     int              `json:"missed"`
	Status     core.NudgeStatus `json:"status"`
	CreatedAt  string           `json:"created_at"`
}

func toNudgeJSON(n core.Nudge) nudgeJSON {
	j := nudgeJSON{ID: n.ID, SessionID: n.SessionID, PlanID: n.PlanID, Kind: n.Kind, Action: n.Action, Spec: n.Spec,
		Fired: n.Fired, Missed: n.Missed, Status: n.Status, CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339)}
	if !n.NextFireAt.IsZero() {
		s := n.NextFireAt.UTC().Format(time.RFC3339)
		j.NextFireAt = &s
	}
	return j
}

// cmdNudges is `plangate nudges list [SESSION] [--json] [--config F]`: every nudge
// schedule, active ones first by next fire time.
func cmdNudges(ctx context.Context, args []string, e procEnv) error {
	const use = "plangate nudges list [SESSION] [--json] [--config F]"
	if len(args) == 0 || args[0] != "list" {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	rd, err := openForReading(ctx, args[1:], "nudges list", e)
	if err != nil {
		return err
	}
	defer rd.st.Close()
	session, ok := optionalArg(rd.args)
	if !ok || rd.markdown {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	ns, err := rd.st.Nudges(ctx, session)
	if err != nil {
		return err
	}
	return listNudges(ns, rd.asJSON, e.stdout)
}

func listNudges(ns []core.Nudge, asJSON bool, w io.Writer) error {
	views := make([]nudgeJSON, 0, len(ns))
	for _, n := range ns {
		views = append(views, toNudgeJSON(n))
	}
	return printList(w, views, asJSON, "No nudge schedules yet. A plan waiting for approval gets them.",
		"ID\tSESSION\tKIND\tACTION\tSPEC\tNEXT FIRE\tFIRED\tMISSED\tSTATUS", func(v nudgeJSON) string {
			next := "-"
			if v.NextFireAt != nil {
				next = *v.NextFireAt
			}
			return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s", v.ID, v.SessionID, v.Kind, v.Action, v.Spec, next, v.Fired, v.Missed, v.Status)
		})
}
