package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/terminal"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
	"github.com/plangate/plangate/store"
)

// reading is what a read-only command opens: the store, its positional arguments, its
// flags, and the config's machine.Reach for a command that renders plan files.
type reading struct {
	st               *store.Store
	args             []string
	asJSON, markdown bool
	reach            machine.Reach
}

// openForReading loads the config and opens the store for a read-only command.
func openForReading(ctx context.Context, fsArgs []string, name string, e procEnv) (reading, error) {
	fs := newFlags(name)
	configPath := fs.String("config", "", "configuration file")
	asJSON := fs.Bool("json", false, "print JSON")
	markdown := fs.Bool("markdown", false, "print the plan's markdown")
	rest, err := parseFlags(fs, fsArgs)
	if err != nil {
		return reading{}, err
	}
	cfg, err := loadConfig(*configPath, e)
	if err != nil {
		return reading{}, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return reading{}, err
	}
	return reading{st: st, args: rest, asJSON: *asJSON, markdown: *markdown, reach: cfg.Tools.reach()}, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printList writes views as JSON, or as a table under header with one row per view, or
// the line empty when there are none.
func printList[T any](w io.Writer, views []T, asJSON bool, empty, header string, row func(T) string) error {
	if asJSON {
		return writeJSON(w, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(w, empty)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, v := range views {
		fmt.Fprintln(tw, row(v))
	}
	return tw.Flush()
}

func cmdSessions(ctx context.Context, args []string, e procEnv) error {
	const use = "plangate sessions list|show ID [--json] [--config F]"
	if len(args) == 0 || (args[0] != "list" && args[0] != "show") {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	rd, err := openForReading(ctx, args[1:], "sessions "+args[0], e)
	if err != nil {
		return err
	}
	defer rd.st.Close()
	if args[0] == "list" {
		if len(rd.args) > 0 {
			return fmt.Errorf("%w: %s", errUsage, use)
		}
		return listSessions(ctx, rd.st, rd.asJSON, e.stdout)
	}
	if len(rd.args) != 1 {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	return showSession(ctx, rd.st, rd.args[0], rd.asJSON, e.stdout)
}

func listSessions(ctx context.Context, st *store.Store, asJSON bool, w io.Writer) error {
	ss, err := st.Sessions(ctx)
	if err != nil {
		return err
	}
	views := make([]adminapi.SessionJSON, 0, len(ss))
	for _, s := range ss {
		v, err := adminapi.SessionView(ctx, st, s)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	return printList(w, views, asJSON, "No sessions yet. Start one with: plangate chat", "SESSION\tPHASE\tPLAN\tUPDATED",
		func(v adminapi.SessionJSON) string {
			plan := "-"
			if v.Plan != nil {
				plan = fmt.Sprintf("v%d %s (%s)", v.Plan.Version, v.Plan.Title, v.Plan.Status)
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s", field(v.ID), v.Phase, field(plan), v.UpdatedAt)
		})
}

func showSession(ctx context.Context, st *store.Store, id string, asJSON bool, w io.Writer) error {
	s, err := st.Session(ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return fmt.Errorf("no session %q; plangate sessions list shows them", id)
	}
	if err != nil {
		return err
	}
	v, err := adminapi.SessionView(ctx, st, s)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, v)
	}
	w = terminal.NewSafeWriter(w)
	fmt.Fprintf(w, "session:        %s\nphase:          %s\nowner:          %s\nauto-approve:   %v\nrevisions:      %d\n", v.ID, v.Phase, v.Owner, v.AutoApprove, v.RejectionCount)
	if q := v.PendingQuestion; q != nil {
		fmt.Fprintf(w, "question:       %s (%s)\n", q.Text, strings.Join(q.Options, " | "))
	}
	if len(v.Approvals) > 0 {
		names := make([]string, len(v.Approvals))
		for i, a := range v.Approvals {
			names[i] = a.By
		}
		fmt.Fprintf(w, "approvals:      %s\n", strings.Join(names, ", "))
	}
	if p := v.Plan; p != nil {
		fmt.Fprintf(w, "plan:           v%d %q (%s) %s\n%s\n", p.Version, p.Title, p.Status, p.File, plan.Checklist(p.Steps))
	} else {
		fmt.Fprintln(w, "plan:           none")
	}
	return nil
}

func cmdPlans(ctx context.Context, args []string, e procEnv) error {
	const use = "plangate plans list [SESSION] [--json] | plangate plans show ID [--json] [--markdown] [--config F]"
	if len(args) == 0 || (args[0] != "list" && args[0] != "show") {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	rd, err := openForReading(ctx, args[1:], "plans "+args[0], e)
	if err != nil {
		return err
	}
	defer rd.st.Close()
	st := rd.st
	if args[0] == "list" {
		session, ok := optionalArg(rd.args)
		if !ok {
			return fmt.Errorf("%w: %s", errUsage, use)
		}
		return listPlans(ctx, st, session, rd.asJSON, e.stdout)
	}
	if len(rd.args) != 1 {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	p, err := st.Plan(ctx, rd.args[0])
	if errors.Is(err, core.ErrNotFound) {
		return fmt.Errorf("no plan %q; plangate plans list shows them", rd.args[0])
	}
	if err != nil {
		return err
	}
	out := terminal.NewSafeWriter(e.stdout) // what the model wrote must not drive the terminal
	switch {
	case rd.markdown:
		s, err := st.Session(ctx, p.SessionID)
		if err != nil {
			return fmt.Errorf("loading session %s: %w", p.SessionID, err)
		}
		_, err = out.Write(machine.RenderPlanMarkdown(p, s.Phase, s.Address.Chat, rd.reach))
		return err
	case rd.asJSON:
		return writeJSON(e.stdout, adminapi.ToPlanDetail(p))
	}
	fmt.Fprintf(out, "plan %s · session %s · v%d · %s\n%s\n", p.ID, p.SessionID, p.Version, p.Status, p.Body.Title)
	if p.Body.Summary != "" {
		fmt.Fprintln(out, p.Body.Summary)
	}
	fmt.Fprintln(out, plan.Checklist(p.Body.Steps))
	if d := p.Decision; d != nil {
		fmt.Fprintf(out, "decision: %s by %s on %s at %s\n", d.Outcome, d.By, d.Channel, d.At.UTC().Format("2006-01-02 15:04 MST"))
	}
	fmt.Fprintf(out, "file: %s\n", p.File)
	return nil
}

func listPlans(ctx context.Context, st *store.Store, session string, asJSON bool, w io.Writer) error {
	ps, err := st.Plans(ctx, session)
	if err != nil {
		return err
	}
	views := make([]adminapi.PlanJSON, 0, len(ps))
	for _, p := range ps {
		views = append(views, adminapi.ToPlanJSON(p, false))
	}
	return printList(w, views, asJSON, "No plans yet.", "ID\tSESSION\tVERSION\tSTATUS\tTITLE", func(p adminapi.PlanJSON) string {
		return fmt.Sprintf("%s\t%s\tv%d\t%s\t%s", p.ID, field(p.SessionID), p.Version, p.Status, field(p.Title))
	})
}

// optionalArg is the one optional positional argument of a list command ("" without it);
// false when there are more.
func optionalArg(args []string) (string, bool) {
	if len(args) > 1 {
		return "", false
	}
	return strings.Join(args, ""), true
}

// field makes a value from a session or plan safe for one cell of a table printed to a
// terminal.
func field(s string) string { return terminal.NeutralizeField(s) }
