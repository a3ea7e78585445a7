package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/plan"
)

// Guards are stops that hold in every phase, plan mode off included, once the gate let a
// call through: a call that would write a secret (its content, a command's arguments, or
// any argument of an MCP tool, read-only ones included, since the server sees them), a
// command on the operator's list of destructive ones, and the output of a command or of an
// MCP tool that changes things that shows a secret. A secret is hidden wherever the turn
// keeps it (the model's call in the transcript, the tool result, the audit row, the
// notice) and the turn stops for a person.

// The gate's rules of the guards, named in the audit rows (ToolAudit.Gate).
const (
	RuleSecret      = "secret"      // the call's content or arguments hold a secret
	RuleDestructive = "destructive" // a command of tools.run_command.destructive
)

// secretCall is a call of the model's answer that would write a secret: what it is
// ("write_file on .env") and the secrets, named ("aws-access-token on line 3").
type secretCall struct {
	what, found string
	verb        string // what the call would do with it: "would write a secret", …
}

// screenCalls scans what the calls of one model answer would write (write_file's content,
// edit_file's new text, run_command's arguments) before the answer enters the transcript.
// A secret is hidden in the call's arguments, so neither the store nor a later model call
// holds it, and the call is noted for the gate to refuse (guard). Arguments that are not
// a JSON object are left to the tool, which refuses them.
func (t *jobRun) screenCalls(calls []core.ToolCall) []core.ToolCall {
	t.secretCalls = nil
	sc := t.e.d.Secrets
	if sc == nil {
		return calls
	}
	var out []core.ToolCall
	for i, c := range calls {
		b, found, ok := screenArgs(sc, c)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(calls)
		}
		out[i].Args = b
		if t.secretCalls == nil {
			t.secretCalls = map[string]secretCall{}
		}
		verb := "would write a secret"
		switch {
		case c.Name == "run_command":
			verb = "would pass a secret on its command line"
		case IsMCPTool(c.Name):
			verb = "would send a secret to its server"
		}
		t.secretCalls[c.ID] = secretCall{what: describeCall(c.Name, b), found: found, verb: verb}
	}
	if out == nil {
		return calls
	}
	return out
}

// screenArgs hides the secrets in what call would write; ok when it found any, with the
// arguments hidden and the secrets named.
func screenArgs(sc core.SecretScanner, call core.ToolCall) (json.RawMessage, string, bool) {
	if IsMCPTool(call.Name) {
		return screenMCPArgs(sc, call)
	}
	args, found, ok := screenWorkspaceArgs(sc, call)
	if !ok {
		// A secret elsewhere in the arguments (another field, a duplicate key the decoder
		// drops, arguments that were not JSON and came as a string) is not written, but the
		// transcript would keep it: screened as an MCP call's are, at the cost of a second
		// scan of a clean call's text.
		return screenMCPArgs(sc, call)
	}
	b, err := json.Marshal(args)
	return b, found, err == nil
}

// screenWorkspaceArgs is screenArgs for a workspace tool: the one argument it writes.
func screenWorkspaceArgs(sc core.SecretScanner, call core.ToolCall) (map[string]json.RawMessage, string, bool) {
	field := map[string]string{"write_file": "content", "edit_file": "new", "run_command": "argv"}[call.Name]
	var args map[string]json.RawMessage
	if field == "" || json.Unmarshal(call.Args, &args) != nil || args[field] == nil {
		return nil, "", false
	}
	if field == "argv" {
		var argv []string
		if json.Unmarshal(args[field], &argv) != nil {
			return nil, "", false
		}
		var named []string
		for i, a := range argv {
			if found := sc.Scan(a); len(found) > 0 {
				argv[i] = core.RedactSecrets(a, found)
				for _, s := range found {
					named = append(named, fmt.Sprintf("%s in argument %d", s.Rule, i+1))
				}
			}
		}
		if len(named) == 0 {
			return nil, "", false
		}
		args[field], _ = json.Marshal(argv)
		return args, strings.Join(slices.Compact(named), ", "), true
	}
	var content string
	if json.Unmarshal(args[field], &content) != nil {
		return nil, "", false
	}
	found := sc.Scan(content)
	if len(found) == 0 {
		return nil, "", false
	}
	args[field], _ = json.Marshal(core.RedactSecrets(content, found))
	return args, core.SecretsList(found), true
}

// screenMCPArgs is screenArgs for an MCP tool: the server gets the arguments as the model
// wrote them, so every string in them, at any depth and object keys included, is scanned,
// and so is their raw text, where a key stands next to its value ({"api_key": "…"}) and a
// duplicate key the decoder drops is still sent. The hidden arguments are the decoded ones.
func screenMCPArgs(sc core.SecretScanner, call core.ToolCall) (json.RawMessage, string, bool) {
	var args any
	if json.Unmarshal(call.Args, &args) != nil {
		return nil, "", false
	}
	raw := sc.Scan(string(call.Args))
	placed := make([]bool, len(raw))
	var named []string
	scan := func(s, at string) (string, bool) {
		found := sc.Scan(s)
		for i, r := range raw {
			if r.Text != "" && strings.Contains(s, r.Text) {
				found, placed[i] = append(found, r), true
			}
		}
		for _, f := range found {
			named = append(named, f.Rule+" in "+at)
		}
		if len(found) == 0 {
			return s, false
		}
		return core.RedactSecrets(s, found), true
	}
	var walk func(v any, at string) any
	walk = func(v any, at string) any {
		switch x := v.(type) {
		case string:
			s, _ := scan(x, cmp.Or(at, "the arguments"))
			return s
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				// A key is sent as it is too; the place named for it cannot be the key.
				key, hid := scan(k, cmp.Or(at, "the arguments")+"'s keys")
				for n := 2; hid && taken(out, key); n++ {
					key = fmt.Sprintf("%s (%d)", key, n) // two hidden keys stay two entries
				}
				if hid {
					out[key] = walk(e, cmp.Or(at, "the arguments")+"'s hidden key")
				} else {
					out[key] = walk(e, strings.TrimPrefix(at+"."+k, "."))
				}
			}
			return out
		case []any:
			for i, e := range x {
				x[i] = walk(e, fmt.Sprintf("%s[%d]", at, i))
			}
		}
		return v
	}
	args = walk(args, "")
	for i, r := range raw {
		if !placed[i] { // in no decoded string: a dropped duplicate, or across values
			named = append(named, r.Rule+" in the arguments")
		}
	}
	if len(named) == 0 {
		return nil, "", false
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, "", false
	}
	slices.Sort(named)
	return b, strings.Join(slices.Compact(named), ", "), true
}

func taken(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// guarded passes a call the gate let through (ok) to guard; a refusal is an audit row
// under the guard's rule.
func (t *jobRun) guarded(ctx context.Context, in gateInput, res toolResult, ok bool) (gateInput, toolResult, bool) {
	if !ok {
		return in, res, false
	}
	if res, why, rule, ok := t.guard(in); !ok {
		in.rule = rule
		t.blocked(ctx, in, why, false) // the stop has its own notice
		return in, res, false
	}
	return in, res, true
}

// guard refuses a call the gate let through when it would write a secret (screenCalls
// found one) or is a destructive command, stopping the turn. It returns the refusal, why in words for the audit row,
// and the rule that refused.
func (t *jobRun) guard(in gateInput) (toolResult, string, string, bool) {
	if sc, ok := t.secretCalls[in.call.ID]; ok {
		why := fmt.Sprintf("%s %s (%s)", sc.what, sc.verb, sc.found)
		return toolResult{
			content: "error: " + why + "; it was not run, and the secret is hidden from this conversation. " +
				"Never put credentials into the workspace, a command line or a tool's arguments: use a placeholder and tell the user where the real value goes.",
			isError: true,
			stop: halt{plan.StopSecretDetected, fmt.Sprintf("Stopped: %s; it was not run, and the secret is hidden from the chat and the transcript. "+
				"Put credentials in place yourself if they belong there, then send a message to let me continue.", why)},
		}, why, RuleSecret, false
	}
	if in.call.Name == "run_command" && len(t.e.cfg.Destructive) > 0 {
		var a struct {
			Argv []string `json:"argv"`
		}
		if json.Unmarshal(in.call.Args, &a) == nil {
			if p, ok := machine.MatchDestructive(t.e.cfg.Destructive, a.Argv); ok {
				what := describeCall(in.call.Name, in.call.Args)
				why := fmt.Sprintf("%s is a destructive command (%q in tools.run_command.destructive)", what, p.Text)
				return toolResult{
					content: "error: " + why + "; it was not run. A person decides on such commands: say why it is needed and stop.",
					isError: true,
					stop: halt{plan.StopDestructiveCommand, fmt.Sprintf("Stopped: %s needs a person: it matches %q (tools.run_command.destructive), so it was not run. "+
						"Run it yourself if it should run, or send a message telling me how to go on.", what, p.Text)},
				}, why, RuleDestructive, false
			}
		}
	}
	return toolResult{}, "", "", true
}

// refusedSecret is the stop of a write the toolbox refused because it would make a secret
// appear (core.SecretWrite: an edit completing one with the lines around it).
func refusedSecret(err error) halt {
	var sw *core.SecretWrite
	if !errors.As(err, &sw) {
		return halt{}
	}
	return halt{plan.StopSecretDetected, fmt.Sprintf("Stopped: %s would write a secret (%s); nothing was written. "+
		"Put credentials in place yourself if they belong there, then send a message to let me continue.", sw.What, sw.Found)}
}

// screenOutput hides the secrets a command or a changing MCP tool printed (out, or the
// output in err's message) before anything keeps them, and stops the turn when there were
// any: the agent gets the output with the secrets hidden, and a person is asked to look.
func (t *jobRun) screenOutput(call core.ToolCall, out string, err error) (string, error, halt) {
	sc := t.e.d.Secrets
	if sc == nil || (call.Name != "run_command" && !IsMCPTool(call.Name)) {
		return out, err, halt{}
	}
	found := sc.Scan(out)
	if err != nil {
		if inErr := sc.Scan(err.Error()); len(inErr) > 0 {
			err = errors.New(core.RedactSecrets(err.Error(), inErr))
			found = append(found, inErr...)
		}
	}
	if len(found) == 0 {
		return out, err, halt{}
	}
	out = core.RedactSecrets(out, found)
	return out, err, halt{plan.StopSecretDetected, fmt.Sprintf("Stopped: the output of %s shows a secret (%s); it is hidden from the agent, the chat and the transcript. "+
		"Check where it came from before the agent goes on; send a message to let me continue.", describeCall(call.Name, call.Args), core.SecretRules(found))}
}
