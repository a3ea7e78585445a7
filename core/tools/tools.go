// Package tools is plangate's workspace toolbox: the read_file, list_files, search_files,
// write_file, edit_file and run_command tools of docs/design.md §6, confined to one
// workspace directory per call with os.Root.
//
// The toolbox does not decide when a tool may run; the engine's gate does (read-only tools
// in any phase, mutating tools only while an accepted plan executes, within its scope).
// The toolbox enforces what must hold in every phase:
//
//   - Paths are relative to the workspace, slash-separated; absolute paths, .. escapes and
//     symlinks that lead out of the workspace are refused (os.Root enforces it).
//   - write_file and edit_file refuse to write through symlinks (the scope check sees the
//     link's path, not its target) and into .git (hooks and config run commands later).
//     Writes replace the file atomically (a temporary file renamed over it), so a hard
//     link is replaced, never written through, and are capped at MaxWriteBytes.
//   - Files are opened non-blocking and checked after opening: FIFOs, devices and
//     regular files with more than one hard link (the other link may lie outside the
//     workspace, where os.Root cannot see) are refused. Reads stop at a byte budget and
//     when the context ends.
//   - run_command runs argv without a shell, only when enabled, only programs listed by
//     exact name, in a bubblewrap sandbox (see SandboxBwrap) with a minimal environment
//     (PATH, HOME = an empty directory, LANG), a timeout, and capped output; when the
//     sandbox cannot start, run_command is not offered. It is always a mutating tool and
//     its WritePaths is WholeWorkspace.
//   - With ProtectPlanCopy, the accepted plan's copy (PLAN.md, PLAN.json) is read-only to
//     every tool, run_command included (see plancopy.go).
//   - A command may use git, but not change the workspace's .git/config, hooks or info
//     (see gitguard.go).
//   - A configured seed directory is copied into a workspace once, when it is created.
//
// A Toolbox is safe for concurrent use by many sessions.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plangate/plangate/core"
)

// Tool names, as the model calls them.
const (
	ToolReadFile    = "read_file"
	ToolListFiles   = "list_files"
	ToolSearchFiles = "search_files"
	ToolWriteFile   = "write_file"
	ToolEditFile    = "edit_file"
	ToolRunCommand  = "run_command"
)

// Defaults for a zero Config.
const (
	DefaultCommandTimeout = 60 * time.Second
	DefaultMaxOutput      = 32 << 10 // bytes
)

// WholeWorkspace is what WritePaths reports for run_command: a command may change any
// file, so the engine's scope check sees the workspace root itself. An accepted plan lets
// commands run only when its allowed_paths include "**" and it forbids nothing.
const WholeWorkspace = "."

// Config configures a Toolbox.
type Config struct {
	// RunCommand offers run_command (tools.run_command.enabled). Off by default.
	RunCommand bool
	// Allow lists the programs run_command may start (tools.run_command.allow), compared
	// with argv[0] exactly. A bare name is looked up in PATH; a name with a path separator
	// runs only when listed exactly as written (relative names start in the workspace).
	// An empty list refuses every command, even when RunCommand is on: enabling the tool
	// without naming programs should not mean "anything goes". Allowing a program allows
	// all of its arguments (git -c, find -exec, env ...): list only programs you would let
	// an accepted plan run freely.
	Allow []string
	// CommandTimeout is run_command's time limit; the model may ask for less with
	// timeout_seconds, never more. 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// MaxOutput caps the bytes of command output and file content one call returns.
	// 0 means DefaultMaxOutput.
	MaxOutput int
	// MaxWriteBytes caps the size of a file write_file or edit_file writes
	// (tools.max_write_bytes). 0 means DefaultMaxWriteBytes.
	MaxWriteBytes int
	// Sandbox is how commands are isolated: SandboxBwrap (also when empty) or
	// SandboxNone (tools.run_command.sandbox).
	Sandbox string
	// Network lets sandboxed commands use the network (tools.run_command.network).
	Network bool
	// Limits bound every sandboxed command (tools.run_command.limits); zero fields take
	// DefaultLimits.
	Limits Limits
	// Bwrap is the bubblewrap program; empty means "bwrap" from PATH.
	Bwrap string
	// Hidden are absolute paths of plangate's own files (database, plans directory,
	// config file): the file tools refuse them and sandboxed commands see them empty.
	Hidden []string
	// ProtectPlanCopy keeps the agent from changing the workspace copy of the accepted
	// plan, PLAN.md and PLAN.json at the workspace root (plan_mode.workspace_copy; see
	// plancopy.go). They stay readable.
	ProtectPlanCopy bool
	// Baselines, when set, is a directory where fingerprints keep the content of the
	// files they see (at most MaxBaselineFile bytes, by content hash; a link's target), so
	// LinesChanged can count the lines a plan's execution changed and Restore can put files
	// back. It must be one of plangate's own, hidden paths (the plans directory's
	// .plangate-baselines).
	Baselines string
	// Seed, when set, is a directory copied into a workspace the first time the workspace
	// is used (the bundled demo workspace). Symlinks and special files are skipped.
	Seed string
	// Secrets, when set, refuses an edit_file whose new text completes a secret with the
	// lines around it (core.SecretWrite); the engine scans the new text itself before the
	// call runs (engine/guards.go).
	Secrets core.SecretScanner
}

// Toolbox implements core.Toolbox.
type Toolbox struct {
	cfg   Config
	specs []core.ToolSpec
	// sandbox runs commands under bwrap; nil with SandboxNone or when unavailable.
	sandbox *sandbox
	// runUnavailable says why run_command is enabled but cannot be offered.
	runUnavailable string
	notices        []string
	// seedMu serialises creating workspaces, so two calls racing on a new workspace
	// do not both seed it.
	seedMu sync.Mutex
}

var _ core.Toolbox = (*Toolbox)(nil)

// New returns a toolbox with cfg, filling in defaults.
func New(cfg Config) *Toolbox {
	orDefault(&cfg.CommandTimeout, DefaultCommandTimeout)
	orDefault(&cfg.MaxOutput, DefaultMaxOutput)
	orDefault(&cfg.MaxWriteBytes, DefaultMaxWriteBytes)
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Allow = slices.Clone(cfg.Allow) // what may run stays as configured
	t := &Toolbox{cfg: cfg}
	if cfg.RunCommand {
		t.setUpSandbox()
	}
	specCfg := cfg
	specCfg.RunCommand = cfg.RunCommand && t.runUnavailable == ""
	t.specs = toolSpecs(specCfg)
	return t
}

// Notices are the lines the operator should see at start-up: why run_command is
// unavailable, or that it runs without a sandbox.
func (t *Toolbox) Notices() []string {
	return append([]string(nil), t.notices...)
}

// runRefusal says why run_command cannot run at all, or returns nil.
func (t *Toolbox) runRefusal() error {
	switch {
	case !t.cfg.RunCommand:
		return errRunDisabled
	case t.runUnavailable != "":
		return errors.New(t.runUnavailable)
	}
	return nil
}

// Tools lists the tools offered to the model; run_command only when enabled.
func (t *Toolbox) Tools() []core.ToolSpec {
	return slices.Clone(t.specs)
}

// Call runs one tool in the workspace ws. Errors are written for the model: they say
// what went wrong and what to try instead.
func (t *Toolbox) Call(ctx context.Context, ws core.Workspace, name string, args json.RawMessage) (string, error) {
	if name == ToolRunCommand {
		if err := t.runRefusal(); err != nil {
			return "", err
		}
	}
	if _, ok := argShapes[name]; !ok {
		return "", fmt.Errorf("unknown workspace tool %q", name)
	}
	if err := t.checkArgSize(name, args); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%s not run: %w", name, err)
	}
	root, err := t.openWorkspace(ws)
	if err != nil {
		return "", err
	}
	defer root.Close()
	w := &workspace{root: root, dir: ws.Dir, maxOut: t.cfg.MaxOutput, maxWrite: t.cfg.MaxWriteBytes, protect: t.cfg.ProtectPlanCopy, secrets: t.cfg.Secrets}
	if len(t.cfg.Hidden) > 0 {
		w.hidden, w.hiddenRel = hiddenIn(ws.Dir, t.cfg.Hidden)
	}
	switch name {
	case ToolReadFile:
		return withArgs(name, args, func(a readArgs) (string, error) { return w.readFile(ctx, a) })
	case ToolListFiles:
		return withArgs(name, args, func(a listArgs) (string, error) { return w.listFiles(ctx, a) })
	case ToolSearchFiles:
		return withArgs(name, args, func(a searchArgs) (string, error) { return w.searchFiles(ctx, a) })
	case ToolWriteFile:
		return withArgs(name, args, w.writeFile)
	case ToolEditFile:
		return withArgs(name, args, func(a editArgs) (string, error) { return w.editFile(ctx, a) })
	default: // ToolRunCommand
		return withArgs(name, args, func(a runArgs) (string, error) { return t.runCommand(ctx, ws.Dir, a) })
	}
}

// withArgs decodes the arguments of tool into an A and calls f with them.
func withArgs[A, R any](tool string, data json.RawMessage, f func(A) (R, error)) (R, error) {
	var a A
	if err := decodeArgs(tool, data, &a); err != nil {
		var zero R
		return zero, err
	}
	return f(a)
}

// WritePaths names what a mutating call would change, as workspace-relative,
// slash-separated, cleaned paths (the form the engine's scope check matches). Read-only
// tools change nothing; run_command reports WholeWorkspace.
func (t *Toolbox) WritePaths(name string, args json.RawMessage) ([]string, error) {
	if err := t.checkArgSize(name, args); err != nil {
		return nil, err
	}
	switch name {
	case ToolReadFile, ToolListFiles, ToolSearchFiles:
		return nil, nil
	case ToolWriteFile:
		return withArgs(name, args, func(a writeArgs) ([]string, error) { return t.writePath(name, a.Path) })
	case ToolEditFile:
		return withArgs(name, args, func(a editArgs) ([]string, error) { return t.writePath(name, a.Path) })
	case ToolRunCommand:
		if err := t.runRefusal(); err != nil {
			return nil, err
		}
		return []string{WholeWorkspace}, nil
	}
	return nil, fmt.Errorf("unknown workspace tool %q", name)
}

// writePath is what write_file or edit_file of p would change. The plan's copy is
// refused here too, so the gate answers with the contract's words rather than a scope
// violation.
func (t *Toolbox) writePath(tool, p string) ([]string, error) {
	rel, err := writeTarget(tool, p)
	if err != nil {
		return nil, err
	}
	if name, ok := core.IsPlanCopy(rel); ok && t.cfg.ProtectPlanCopy {
		return nil, core.PlanCopyRefusal(name)
	}
	return []string{rel}, nil
}

// maxArgBytes bounds the JSON arguments of the tools that take no file content.
const maxArgBytes = 64 << 10

// checkArgSize refuses oversized arguments before they are decoded. write_file and
// edit_file may carry a whole file of MaxWriteBytes, however the JSON escapes it.
func (t *Toolbox) checkArgSize(name string, args json.RawMessage) error {
	limit := maxArgBytes
	if name == ToolWriteFile || name == ToolEditFile {
		limit = 6*t.cfg.MaxWriteBytes + maxArgBytes
	}
	if len(args) > limit {
		return fmt.Errorf("the arguments of %s are %d bytes, more than the %d it accepts; send a smaller call", name, len(args), limit)
	}
	return nil
}

// decodeArgs decodes tool arguments strictly: unknown fields, wrong types and trailing
// data are refused with the expected shape, so the model can correct its call.
func decodeArgs(tool string, data json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(data))) == 0 || strings.TrimSpace(string(data)) == "null" {
		data = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("extra data after the JSON object")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("extra data after the JSON object")
		}
	}
	if err != nil {
		return fmt.Errorf("%s arguments are invalid (%s); expected %s", tool, argError(err), argShapes[tool])
	}
	return nil
}

// argError turns a JSON decoding error into words without Go type names.
func argError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		switch {
		case strings.HasPrefix(want, "[]"):
			want = "an array of " + strings.TrimPrefix(want, "[]") + "s"
		case want == "int":
			want = "an integer"
		case want == "string":
			want = "a string"
		case strings.Contains(want, "Args"):
			want = "an object"
		}
		if te.Field == "" {
			return fmt.Sprintf("got a JSON %s, want %s", te.Value, want)
		}
		return fmt.Sprintf("field %q: got a JSON %s, want %s", te.Field, te.Value, want)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not valid JSON: " + se.Error()
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// argShapes are the argument shapes of docs/design.md §6, quoted in argument errors.
var argShapes = map[string]string{
	ToolReadFile:    "{path: string, offset?: int, limit?: int}",
	ToolListFiles:   "{path?: string, pattern?: string, depth?: int}",
	ToolSearchFiles: "{pattern: string, path?: string, glob?: string}",
	ToolWriteFile:   "{path: string, content: string}",
	ToolEditFile:    "{path: string, old: string, new: string}",
	ToolRunCommand:  "{argv: [string], timeout_seconds?: int}",
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

type listArgs struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	Depth   int    `json:"depth"`
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"` // a pointer, so a missing content is not an empty file
}

type editArgs struct {
	Path string  `json:"path"`
	Old  *string `json:"old"`
	New  *string `json:"new"`
}

type runArgs struct {
	Argv           []string `json:"argv"`
	TimeoutSeconds int      `json:"timeout_seconds"`
}

// sandboxNote tells the model what a command can do, so it does not try the impossible.
func sandboxNote(cfg Config) string {
	if cfg.Sandbox == SandboxNone {
		return ""
	}
	note := " Commands run in a sandbox: only the workspace is writable, /tmp is private and empty, HOME is an empty directory, background processes end with the command"
	if !cfg.Network {
		note += ", and there is no network"
	}
	return note + "."
}

// toolSpecs describes the tools to the model and the gate.
func toolSpecs(cfg Config) []core.ToolSpec {
	obj := func(required, props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","required":[` + required + `],"additionalProperties":false,"properties":{` + props + `}}`)
	}
	specs := []core.ToolSpec{
		{Name: ToolReadFile, Kind: core.ToolReadOnly,
			Description: "Read a text file of the workspace with line numbers. Long files come in pages: pass offset (first line, 1-based) and limit (number of lines) to read further.",
			Parameters: obj(`"path"`,
				`"path":{"type":"string","description":"file path relative to the workspace root, e.g. docs/guide.md"},`+
					`"offset":{"type":"integer","minimum":1,"description":"first line to show, 1-based (default 1)"},`+
					`"limit":{"type":"integer","minimum":1,"description":"maximum number of lines to show"}`)},
		{Name: ToolListFiles, Kind: core.ToolReadOnly,
			Description: "List files and directories of the workspace (directories end with /; .git is hidden). Paths are relative to the workspace root.",
			Parameters: obj(``,
				`"path":{"type":"string","description":"directory to list, relative to the workspace root (default .)"},`+
					`"pattern":{"type":"string","description":"glob on file names, e.g. *.md"},`+
					`"depth":{"type":"integer","minimum":1,"description":"how many directory levels to descend (default 2)"}`)},
		{Name: ToolSearchFiles, Kind: core.ToolReadOnly,
			Description: "Search text files of the workspace with a regular expression (Go RE2 syntax). Prints file:line: text for each matching line; binary files and .git are skipped.",
			Parameters: obj(`"pattern"`,
				`"pattern":{"type":"string","description":"regular expression, e.g. (?i)todo"},`+
					`"path":{"type":"string","description":"directory or file to search, relative to the workspace root (default .)"},`+
					`"glob":{"type":"string","description":"only files whose name matches this glob, e.g. *.go; with a / it matches the path from the workspace root"}`)},
		{Name: ToolWriteFile, Kind: core.ToolMutating,
			Description: "Create or overwrite a file of the workspace with the given content; parent directories are created. Only allowed while an accepted plan is executing, within its scope." + copyNote(cfg),
			Parameters: obj(`"path","content"`,
				`"path":{"type":"string","description":"file path relative to the workspace root"},`+
					`"content":{"type":"string","description":"the complete new content of the file"}`)},
		{Name: ToolEditFile, Kind: core.ToolMutating,
			Description: "Replace one exact occurrence of old with new in a workspace file. old must match exactly once (including whitespace); include surrounding lines to make it unique. Only allowed while an accepted plan is executing, within its scope." + copyNote(cfg),
			Parameters: obj(`"path","old","new"`,
				`"path":{"type":"string","description":"file path relative to the workspace root"},`+
					`"old":{"type":"string","description":"the exact text to replace, as read_file shows it without the line numbers"},`+
					`"new":{"type":"string","description":"the replacement text"}`)},
	}
	if cfg.RunCommand {
		allowed := "none are configured, so every command is refused"
		if len(cfg.Allow) > 0 {
			allowed = strings.Join(cfg.Allow, ", ")
		}
		specs = append(specs, core.ToolSpec{Name: ToolRunCommand, Kind: core.ToolMutating,
			Description: "Run a program in the workspace directory, without a shell (no pipes, globs or redirection). argv[0] must be one of the allowed programs (" + allowed + "). Returns the exit code and the combined output. Only allowed while an accepted plan is executing, and its scope must cover the whole workspace (\"**\")." + sandboxNote(cfg),
			Parameters: obj(`"argv"`,
				`"argv":{"type":"array","minItems":1,"items":{"type":"string"},"description":"program and arguments, e.g. [\"go\", \"test\", \"./...\"]"},`+
					`"timeout_seconds":{"type":"integer","minimum":1,"description":"stop the command after this many seconds (capped by the gateway)"}`)})
	}
	return specs
}
