// Package terminal is the stdin/stdout channel, the default for trying plangate and the
// one scripts drive. Each input line is one message, handled to completion before the next
// is read, so piped input runs in order and the last turn has finished when Run returns.
// Replies are printed as plain text; attachments are saved to a directory and printed as
// "[attachment] <path>" lines.
package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/yuin/goldmark/util"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// Name is the channel name in core.Address.Channel.
const Name = "terminal"

// EditHint is how a person sends an edited plan file back here (engine.Config.EditHints).
const EditHint = "/plan edit PATH"

// account is the Address.Account of every terminal session: there is one local user base.
const account = core.LocalAccount

// maxLine bounds one input line; a pasted document longer than this is an input error.
const maxLine = 1 << 20

// Channel is the terminal channel. Send and Edit may be called from any goroutine.
type Channel struct {
	cfg         Config
	in          io.Reader
	interactive bool
	log         *slog.Logger
	now         func() time.Time
	wd          string // for printing attachment paths relative to it

	mu  sync.Mutex // serializes writes to out and the id counter
	out io.Writer
	ids int
	// prompting: a "> " prompt is showing and the user may be typing; a reply that arrives
	// now (a nudge) clears the prompt line, prints, and shows the prompt again.
	prompting bool
}

var (
	_ channels.Channel = (*Channel)(nil)
	_ channels.Editor  = (*Channel)(nil)
)

// New returns a terminal channel reading lines from in and printing to out. The "> " prompt
// is shown only when in is a terminal. A nil log discards.
func New(cfg Config, in io.Reader, out io.Writer, log *slog.Logger) *Channel {
	if cfg.Session == "" {
		cfg.Session = "main"
	}
	if cfg.Sender == "" {
		cfg.Sender = "local"
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wd, err := os.Getwd()
	if err != nil {
		wd = "" // paths are then printed as given
	}
	return &Channel{cfg: cfg, in: in, interactive: isTerminal(in), log: log, now: time.Now, wd: wd, out: out}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// Address is the conversation this terminal speaks in.
func (c *Channel) Address() core.Address {
	return core.Address{Channel: Name, Account: account, Chat: c.cfg.Session}
}

// Run reads lines until the input ends (returning nil) or ctx ends (also nil). Each line is
// handed to h and handled to completion before the next is read. A Handler error is printed
// as one "error: ..." line and reading goes on.
func (c *Channel) Run(ctx context.Context, h channels.Handler) error {
	lines := make(chan string)
	readErr := make(chan error, 1)
	// Reading happens in its own goroutine so that a cancelled context ends Run even while
	// a read from a terminal is blocked; that goroutine ends when the input does.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(c.in)
		sc.Buffer(make([]byte, 0, 64*1024), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				readErr <- nil
				return
			}
		}
		readErr <- sc.Err()
	}()

	c.prompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("reading terminal input: %w", err)
				}
				if c.interactive {
					c.printLine("") // end the prompt line after Ctrl-D
				}
				return nil
			}
			c.mu.Lock()
			c.prompting = false
			c.mu.Unlock()
			c.handleLine(ctx, h, line)
			c.prompt()
		}
	}
}

// handleLine turns one input line into a message and hands it to h.
func (c *Channel) handleLine(ctx context.Context, h channels.Handler, line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	sender, operator := c.cfg.Sender, true
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		name, text := rest, ""
		if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
			name, text = rest[:i], strings.TrimSpace(rest[i:])
		}
		if name == "" || text == "" {
			c.printLine("To speak as someone else for one line: !name <message>, e.g. !alice /plan accept")
			return
		}
		sender, line, operator = name, text, false
	}
	m := core.Message{
		Address: c.Address(),
		Sender:  core.Person{ID: sender, Name: sender, Operator: operator},
		Text:    line,
		// Every line is addressed to the bot; the terminal is not direct, so "!name" can
		// stand for several people in one shared conversation.
		Mentioned: true,
		Time:      c.now(),
	}
	if f, problem, ok := c.editFile(ctx, line); ok {
		if problem != "" {
			c.printLine(problem + "\n")
			return
		}
		m.Attachments = []core.File{f}
	}
	if err := channels.Handle(ctx, h, m); err != nil {
		c.log.Error("handling terminal line", "session", c.cfg.Session, "sender", sender, "err", err)
		c.printLine("error: " + oneLine(err.Error()))
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (c *Channel) prompt() {
	if !c.interactive {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompting = true
	_, _ = io.WriteString(c.out, "> ") // a prompt that fails to print is harmless
}

func (c *Channel) printLine(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.out, s+"\n"); err != nil {
		c.log.Warn("writing to terminal", "err", err)
	}
}

// Send implements channels.Channel: it prints r and returns "t1", "t2", ... An attachment
// that cannot be saved is printed as not saved, and Send reports the error after printing
// the rest of the reply.
func (c *Channel) Send(ctx context.Context, r core.Reply) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if r.Kind == core.ReplyDecided {
		// The terminal printed no buttons, so there is nothing to take back; the decision
		// itself is answered in its own reply.
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids++
	id := "t" + strconv.Itoa(c.ids)
	if c.prompting {
		// Clear the prompt line (carriage return, erase line), print, prompt again.
		_, _ = io.WriteString(c.out, "\r\x1b[2K")
		err := c.printReply(r)
		_, _ = io.WriteString(c.out, "> ")
		return id, err
	}
	return id, c.printReply(r)
}

// Edit implements channels.Editor by printing the edited reply again in full.
func (c *Channel) Edit(ctx context.Context, id string, r core.Reply) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.printReply(r)
}

// printReply writes one reply followed by a blank line; c.mu must be held.
func (c *Channel) printReply(r core.Reply) error {
	var b strings.Builder
	// Everything printed comes from the model, the workspace or other people: neutralize
	// control and escape sequences so none is interpreted by the terminal.
	if text := Neutralize(plainText(r.Text)); text != "" {
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	// Buttons are not printed: the reply text always names the /plan commands that do the
	// same, and a terminal cannot click.
	var errs []error
	for _, f := range r.Attachments {
		path, err := c.attachmentPath(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("saving attachment %q: %w", f.Name, err))
			fmt.Fprintf(&b, "[attachment] %s (not saved: %s)\n", NeutralizeField(f.Name), NeutralizeField(oneLine(err.Error())))
			continue
		}
		fmt.Fprintf(&b, "[attachment] %s\n", NeutralizeField(path))
	}
	b.WriteByte('\n')
	if _, err := io.WriteString(c.out, b.String()); err != nil {
		errs = append(errs, fmt.Errorf("writing to terminal: %w", err))
	}
	return errors.Join(errs...)
}

// attachmentPath returns the path to print for f, saving f.Data first when the file does
// not already live on disk, and the name it was saved under.
func (c *Channel) attachmentPath(f core.File) (string, error) {
	if f.Path != "" {
		return c.display(f.Path), nil
	}
	name := f.Name
	if name == "" {
		name = "attachment"
	}
	if err := c.save(name, f.Data); err != nil {
		return "", err
	}
	return c.display(filepath.Join(c.cfg.AttachmentsDir, filepath.FromSlash(name))), nil
}

// save writes data to AttachmentsDir/name through an os.Root, so a name such as
// "../../etc/x" or an absolute path cannot write outside the directory.
func (c *Channel) save(name string, data []byte) error {
	if c.cfg.AttachmentsDir == "" {
		return errors.New("no attachments directory configured")
	}
	name = filepath.FromSlash(name)
	// os.Root is what enforces this, symbolic links included; the check first only gives
	// the plain cases a message a person understands.
	if !filepath.IsLocal(name) {
		return errors.New("the name leads outside the attachments directory")
	}
	if err := os.MkdirAll(c.cfg.AttachmentsDir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(c.cfg.AttachmentsDir)
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return root.WriteFile(name, data, 0o644)
}

// display shows an absolute path inside the working directory relative to it, which is
// shorter and is what a user typing commands in that directory would use.
func (c *Channel) display(path string) string {
	if c.wd == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(c.wd, path)
	if err != nil || !filepath.IsLocal(rel) {
		return path
	}
	return rel
}

// plainText is reply markdown as a terminal shows it: as written, which reads fine, less
// the backslash escapes of ASCII punctuation that keep model text from forging markdown.
func plainText(md string) string {
	if !strings.Contains(md, "\\") {
		return md
	}
	var b strings.Builder
	b.Grow(len(md))
	for i := 0; i < len(md); i++ {
		if md[i] == '\\' && i+1 < len(md) && util.IsPunct(md[i+1]) {
			i++
		}
		b.WriteByte(md[i])
	}
	return b.String()
}
