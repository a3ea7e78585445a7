package terminal

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
)

// editFile reads the file that "/plan edit PATH" names (relative to the working
// directory), within the size limit, for the engine. ok is false when the line is not
// such a command; a file that cannot be opened is reported with its reason.
func (c *Channel) editFile(ctx context.Context, line string) (f core.File, problem string, ok bool) {
	r := commands.Parse(line, "")
	if r.Kind != commands.IsCommand || r.Cmd.Name != commands.Edit || r.Cmd.Args == "" {
		return core.File{}, "", false
	}
	path := r.Cmd.Args
	unreadable := func(err error) string {
		return "I could not read " + path + ": " + oneLine(err.Error()) + ". Nothing changed."
	}
	// Open first, then look at what was opened (a name can change between a stat and an
	// open); without blocking, so a FIFO or a device never hangs the console.
	file, err := openNoBlock(path)
	if errors.Is(err, fs.ErrNotExist) {
		return core.File{}, "There is no file " + path + ". Nothing changed.", true
	}
	if err != nil {
		return core.File{}, unreadable(err), true
	}
	defer file.Close()
	st, err := file.Stat()
	switch {
	case err != nil:
		return core.File{}, unreadable(err), true
	case st.IsDir():
		return core.File{}, path + " is a directory; /plan edit needs the plan's .md file. Nothing changed.", true
	case !st.Mode().IsRegular():
		return core.File{}, path + " is not a regular file (a pipe or a device); /plan edit needs the plan's .md file. Nothing changed.", true
	}
	f, err = channels.FetchPlanFile(ctx, filepath.Base(path), "", st.Size(), func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(file), nil
	})
	if err != nil {
		return core.File{}, unreadable(err), true
	}
	return f, "", true
}
