// Command plangate runs the plangate gateway: a terminal chat, every enabled chat channel,
// and read-only views of sessions and plans. This package only wires the parts together:
// config -> store -> model -> core -> channels.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/terminal"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/llm"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/tools"
)

// version is plangate's release; "dev" builds come from a checkout.
const version = "0.1.0-dev"

const usage = `plangate — a chat gateway where an AI agent plans before it acts.

Usage:
  plangate chat [--config F] [--session NAME]   chat in this terminal (replies and attachment paths on stdout)
  plangate serve [--config F]                   run the enabled chat channels (Telegram, Slack, Discord) and the
                                                HTTP server (http.listen) until SIGINT/SIGTERM
  plangate sessions list|show ID [--json]       inspect sessions
  plangate plans list|show ID [--json] [--markdown]
  plangate nudges list [SESSION] [--json]       reminder schedules with their next fire time
  plangate config check [--config F] [--probe]  validate the configuration and summarise it; --probe as doctor
  plangate doctor [--config F]                  probe the store, the model, the sandbox and the platform tokens
  plangate store check [--config F] [--full]    check the database file for damage
  plangate store backup FILE [--config F]       copy the database into a new file while it is in use
  plangate store migrate [--config F]           apply pending database migrations and exit
  plangate store copy --from sqlite:FILE --to postgres://...
                                                copy a deployment's store into an empty one (either way)
  plangate version

Without --config, plangate reads $PLANGATE_CONFIG, else ./config.yaml. plangate COMMAND --help lists a command's flags.`

// procEnv is what a command may use from its process; tests substitute every part.
type procEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
}

// errUsage marks errors that are the caller's wording, answered with exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := procEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	code := run(ctx, os.Args[1:], e)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, e procEnv) int {
	err := dispatch(ctx, args, e)
	var help helpRequested
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		fmt.Fprint(e.stdout, string(help))
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(e.stderr, err.Error())
		return 2
	default:
		fmt.Fprintln(e.stderr, "plangate:", err)
		return 1
	}
}

// commands are the subcommands that take arguments, by name.
var commands = map[string]func(context.Context, []string, procEnv) error{
	"chat":     cmdChat,
	"serve":    cmdServe,
	"sessions": cmdSessions,
	"plans":    cmdPlans,
	"nudges":   cmdNudges,
	"config":   cmdConfig,
	"store":    cmdStore,
	"doctor":   cmdDoctor,
}

func dispatch(ctx context.Context, args []string, e procEnv) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: a command is required\n\n%s", errUsage, usage)
	}
	cmd, rest := args[0], args[1:]
	if run, ok := commands[cmd]; ok {
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help") {
			if help, ok := groupHelp(cmd); ok {
				return helpRequested(help)
			}
		}
		return run(ctx, rest, e)
	}
	switch cmd {
	case "version", "--version":
		fmt.Fprintln(e.stdout, "plangate", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(e.stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q\n\n%s", errUsage, cmd, usage)
}

// groupHelp is --help right after a command made of subcommands (sessions, plans,
// nudges, config, store): its lines of the usage, then the whole usage; ok is false for a
// command whose flags answer --help themselves.
func groupHelp(cmd string) (string, bool) {
	switch cmd {
	case "sessions", "plans", "nudges", "config", "store":
	default:
		return "", false
	}
	var lines []string
	for _, l := range strings.Split(usage, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "plangate "+cmd+" ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return "plangate " + cmd + ":\n  " + strings.Join(lines, "\n  ") + "\n\n" + usage + "\n", true
}

// newFlags returns a flag set whose errors are returned, not printed and exited on.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// helpRequested is -h or --help after a command: the command's flags, for stdout (exit
// status 0, as for `plangate help`).
type helpRequested string

func (h helpRequested) Error() string { return string(h) }

// parseFlags parses flags that may stand before, between or after the positional
// arguments (`plangate sessions show ID --json`), and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			fmt.Fprintf(&b, "plangate %s, its flags:\n", fs.Name())
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			fmt.Fprintf(&b, "\n%s\n", usage)
			return nil, helpRequested(b.String())
		}
		if err != nil {
			return nil, fmt.Errorf("%w: plangate %s: %v", errUsage, fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func loadConfig(flagValue string, e procEnv) (*Config, error) {
	return LoadConfig(ConfigPath(flagValue, e.getenv), e.getenv)
}

// loadConfigFlags adds --config to fs, parses the flags of a command that takes no
// arguments, and loads the configuration.
func loadConfigFlags(fs *flag.FlagSet, args []string, e procEnv) (*Config, error) {
	configPath := fs.String("config", "", "configuration file")
	if rest, err := parseFlags(fs, args); err != nil {
		return nil, err
	} else if len(rest) > 0 {
		return nil, fmt.Errorf("%w: plangate %s takes no arguments (got %q)", errUsage, fs.Name(), rest[0])
	}
	return loadConfig(*configPath, e)
}

func newLogger(cfg *Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Log.Level.Slog()}
	if cfg.Log.Format == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// newModel starts the configured model provider and says which one in a phrase.
func newModel(cfg *Config, e procEnv, log *slog.Logger) (core.Model, string, error) {
	provider, why := cfg.ResolvedProvider(e.getenv)
	switch provider {
	case ProviderScript:
		s, err := llm.LoadScript(cfg.LLM.Script)
		if err != nil {
			return nil, "", fmt.Errorf("the model: %s (llm.script; a relative path is read from the configuration file's directory): %w", why, err)
		}
		return s, why, nil
	case ProviderOpenAI:
		m, err := llm.NewOpenAI(llm.OpenAIConfig{
			BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey, Model: cfg.LLM.Model, PlanModel: cfg.LLM.PlanModel,
			Temperature: cfg.LLM.Temperature, Timeout: cfg.LLM.Timeout, MaxRetries: cfg.LLM.MaxRetries,
			TurnBudget: cfg.LLM.TurnBudget,
		}, log)
		if err != nil {
			return nil, "", fmt.Errorf("llm: %w", err)
		}
		return m, why, nil
	}
	return nil, "", fmt.Errorf("unknown model provider %q", provider)
}

// newToolbox builds the workspace tools. A configured seed directory must exist now, not
// at the first tool call.
func newToolbox(cfg *Config, sc core.SecretScanner) (*tools.Toolbox, error) {
	if seed := cfg.Workspace.Seed; seed != "" {
		if st, err := os.Stat(seed); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("workspace.seed: %s is not a directory (set workspace.seed: \"\" to start with empty workspaces)", seed)
		}
	}
	return tools.New(tools.Config{
		RunCommand:    cfg.Tools.RunCommand.Enabled,
		Allow:         cfg.Tools.RunCommand.Allow,
		Sandbox:       cfg.Tools.RunCommand.Sandbox,
		Network:       cfg.Tools.RunCommand.Network,
		Limits:        cfg.Tools.RunCommand.Limits.limits(),
		MaxWriteBytes: cfg.Tools.MaxWriteBytes,
		Hidden:        ownFiles(cfg),
		Seed:          cfg.Workspace.Seed,
		Baselines:     baselinesDir(cfg),
		// The copy exists only where plan mode writes it; elsewhere a PLAN.md is the
		// workspace's own file.
		ProtectPlanCopy: cfg.PlanMode.Enabled && cfg.PlanMode.WorkspaceCopy,
		Secrets:         sc,
	}), nil
}

// baselinesDir is where fingerprints keep text files' content for counting a plan's
// changed lines: inside the plans directory, which the tools never see.
func baselinesDir(cfg *Config) string {
	if cfg.Plans.Dir == "" {
		return ""
	}
	return filepath.Join(cfg.Plans.Dir, ".plangate-baselines")
}

// ownFiles are plangate's own files, which the agent's tools and commands never see:
// the database with its journal files, the plans directory and the config file.
func ownFiles(cfg *Config) []string {
	var out []string
	if db := cfg.Store.Path; db != "" && !cfg.Store.postgres() {
		out = append(out, db, db+"-wal", db+"-shm", db+"-journal")
	}
	if cfg.Plans.Dir != "" {
		out = append(out, cfg.Plans.Dir)
	}
	if cfg.file != "" {
		if abs, err := filepath.Abs(cfg.file); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// destructive is tools.run_command.destructive as patterns (Validate has checked each).
func destructive(rc RunCommandConfig) []machine.CommandPattern {
	ps, _ := machine.ParseCommandPatterns(rc.Destructive)
	return ps
}

func engineConfig(cfg *Config) engine.Config {
	return engine.Config{
		Reach:              cfg.Tools.reach(),
		PlansDir:           cfg.Plans.Dir,
		WorkspaceRoot:      cfg.Workspace.Root,
		PerSession:         cfg.Workspace.PerSession,
		SystemPrompt:       cfg.Agent.SystemPrompt,
		MaxIterations:      cfg.Agent.MaxIterations,
		MaxSameFailure:     cfg.Agent.MaxSameFailure,
		Destructive:        destructive(cfg.Tools.RunCommand),
		HistoryMessages:    cfg.Agent.HistoryMessages,
		HistoryChars:       cfg.Agent.HistoryChars,
		ToolResultChars:    cfg.Agent.ToolResultChars,
		PlanMode:           cfg.PlanMode.Enabled,
		StartInPlan:        cfg.PlanMode.StartInPlan,
		AutoApprove:        cfg.PlanMode.AutoApprove,
		Approvers:          cfg.Access.Approvers,
		Policies:           cfg.Access.CorePolicies(),
		Access:             cfg.Access.rules(),
		EditHints:          editHints(),
		AutoApproveRules:   cfg.PlanMode.CoreRules(),
		Nudges:             cfg.PlanMode.Nudges,
		ApprovalTimeout:    cfg.PlanMode.ApprovalTimeout,
		WorkspaceCopy:      cfg.PlanMode.WorkspaceCopy,
		Planner:            cfg.PlanMode.Planner.CorePlanner(),
		Boundary:           cfg.PlanMode.Boundary,
		EscalateTo:         cfg.PlanMode.CoreEscalateTo(),
		DecideURL:          cfg.decideURL(),
		TypingDelay:        engine.DefaultTypingDelay,
		MaxVerifierRetries: verifierRetries(cfg.RetryPolicy.MaxVerifierRetries),
	}
}

// verifierRetries is retry_policy.max_verifier_retries for the engine, whose zero means
// its default.
func verifierRetries(n int) int {
	if n == 0 {
		return engine.NoVerifierRetries
	}
	return n
}

func cmdChat(ctx context.Context, args []string, e procEnv) error {
	fs := newFlags("chat")
	configPath := fs.String("config", "", "configuration file")
	session := fs.String("session", "main", "session name")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: plangate chat takes no arguments (got %q)", errUsage, rest[0])
	}
	if *session == "" {
		return fmt.Errorf("%w: --session must not be empty", errUsage)
	}
	cfg, err := loadConfig(*configPath, e)
	if err != nil {
		return err
	}
	// The chat shares the terminal with the log: only warnings and errors, unless the
	// config asks for debug output.
	if cfg.Log.Level != LogDebug {
		cfg.Log.Level = LogWarn
	}
	log := newLogger(cfg, e.stderr)
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	tc := cfg.Channels.Terminal
	tc.Session = *session
	term := terminal.New(tc, e.stdin, e.stdout, log)
	hub := channels.NewHub(log, term)
	g, err := startGateway(ctx, cfg, e, log, st, hub, []string{term.Name()}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plangate chat · session %s · %s · /plan help lists the commands\n", *session, g.why)
	// Each line is handled to the end before the next is read; nudges for this terminal
	// arrive in between while the chat is open.
	here := term.Address().SessionID()
	g.unsent(ctx, func(id string) bool { return id == here }).Deliver(ctx)
	if _, err := g.eng.Resume(ctx, func(s core.Session) bool { return s.ID == here }); err != nil {
		log.Error("resuming unfinished work", "err", err)
	}
	runErr := hub.Run(ctx, g.eng)
	return errors.Join(runErr, g.shutdown(5*time.Second, nil))
}

func cmdServe(ctx context.Context, args []string, e procEnv) error {
	cfg, err := serveConfig(args, e)
	if err != nil {
		return err
	}
	log := newLogger(cfg, e.stderr)
	if w := cfg.openApprovalWarning(); w != "" {
		log.Warn(w)
	}
	st, err := openCheckedStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	web, err := listenHTTP(cfg, st, log)
	if err != nil {
		return err
	}
	defer web.close()

	leaveReplica, err := startReplica(ctx, cfg, st, e.now, log) // PostgreSQL: this replica's lease, adopted inboxes
	if err != nil {
		return err
	}
	defer leaveReplica()
	// Receiving (the channels and the HTTP server) stops at SIGINT/SIGTERM (ctx) or when one
	// of them fails; work already accepted runs on under workCtx and gets a grace period to
	// finish before it is interrupted. The HTTP server runs from here, so /healthz and
	// /readyz answer while a platform that cannot be reached yet is tried again.
	recvCtx, stopReceiving := context.WithCancel(ctx)
	defer stopReceiving()
	opening := web.opening()
	web.start(recvCtx, stopReceiving)
	chans, err := openChannelsPatiently(recvCtx, cfg, st, e.now, log, opening)
	if err != nil {
		stopReceiving()
		if ctx.Err() != nil {
			err = nil // stopped while a platform was being tried again: a clean stop
		}
		return errors.Join(err, web.wait())
	}
	serving := map[string]bool{}
	var names []string
	for _, c := range chans {
		serving[c.Name()] = true
		names = append(names, c.Name())
	}
	hub := channels.NewHub(log, chans...)
	g, err := startGateway(ctx, cfg, e, log, st, web.adminSender(hub), names, web.observe(hub))
	if err != nil {
		return err
	}
	web.watchMCP(g.mcp) // /readyz notes and /metrics series of the MCP servers
	log.Info("plangate serving", "channels", strings.Join(names, ","), "model", g.why)

	workCtx, interrupt := context.WithCancel(context.WithoutCancel(ctx))
	defer interrupt()
	backlog := g.unsent(workCtx, nil)
	resumed := g.resume(workCtx, func(s core.Session) bool { return serving[s.Address.Channel] })
	running := web.track(elect(chans, cfg, st, e.now, log))
	web.registerAdmin(st, workHandler{eng: g.eng, ctx: workCtx}, e.now, cfg.Tools.reach())
	opening.done()
	web.announce()
	if cfg.Store.postgres() { // the work of replicas that die while this one runs
		tick := time.NewTicker(takeOverEvery)
		defer tick.Stop()
		go newTakeover(cfg, g, st, chans, e.now, log).run(recvCtx, workCtx, tick.C)
	}
	go func() {
		backlog.Deliver(workCtx)
		resumed()
	}()
	runErr := channels.NewHub(log, running...).Run(recvCtx, workHandler{eng: g.eng, ctx: workCtx})
	stopReceiving()
	log.Info("stopping: waiting for agent turns in progress")
	stopErr := errors.Join(g.shutdown(30*time.Second, interrupt), web.wait())
	left, drainErr := drainChannels(chans, log)
	stopErr = errors.Join(stopErr, drainErr)
	switch {
	case runErr == nil && stopErr == nil && left == 0:
		log.Info("stopped cleanly")
	case runErr == nil && stopErr == nil:
		log.Warn("stopped; messages left unanswered are handled at the next start", "left", left)
	}
	return errors.Join(runErr, stopErr)
}

// serveConfig reads serve's flags and its configuration, which must enable a channel.
func serveConfig(args []string, e procEnv) (*Config, error) {
	cfg, err := loadConfigFlags(newFlags("serve"), args, e)
	if err != nil {
		return nil, err
	}
	if err := servesChannels(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func cmdConfig(ctx context.Context, args []string, e procEnv) error {
	if len(args) == 0 || args[0] != "check" {
		return fmt.Errorf("%w: plangate config check [--config F] [--probe]", errUsage)
	}
	fs := newFlags("config check")
	probe := fs.Bool("probe", false, "also probe what the config points at, as plangate doctor does")
	cfg, err := loadConfigFlags(fs, args[1:], e)
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, cfg.Describe())
	if _, _, err := newModel(cfg, e, nil); err != nil {
		return err // the script chat and serve would read, or the provider's settings
	}
	if w := cfg.openApprovalWarning(); w != "" {
		fmt.Fprintln(e.stdout, "warning:", w)
	}
	fmt.Fprintln(e.stdout, "config ok")
	if *probe {
		return probeAll(ctx, cfg, e)
	}
	return nil
}
