package channels

import (
	"context"
	"fmt"
	"io"

	"github.com/plangate/plangate/commands"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/plan"
)

// Edited plan files (docs/design.md §13): every adapter downloads a file a person sends back for
// /plan edit the same way, so the limits hold alike on every platform.

// FetchPlanFile downloads an inbound file for /plan edit within plan.MaxFileBytes.
// declared is the size the platform announced (0 if unknown). A file announced over the
// limit, or that is not a text file, is not downloaded: the File then carries only its
// name, type and size, and the engine refuses it with the reason. A download that runs
// past the limit stops there, with the same result. A failed download is an error.
func FetchPlanFile(ctx context.Context, name, mime string, declared int64, open func(ctx context.Context) (io.ReadCloser, error)) (core.File, error) {
	f := core.File{Name: name, MIME: mime}
	if declared > plan.MaxFileBytes || !core.IsTextFile(name, mime) {
		f.Size = max(declared, 1)
		return f, nil
	}
	rc, err := open(ctx)
	if err != nil {
		return core.File{}, fmt.Errorf("downloading %q: %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, plan.MaxFileBytes+1))
	if err != nil {
		return core.File{}, fmt.Errorf("downloading %q: %w", name, err)
	}
	if len(data) > plan.MaxFileBytes {
		f.Size = max(declared, int64(len(data)))
		return f, nil
	}
	f.Data = data
	return f, nil
}

// EditCommand is the text of a message that answers a plan with a file: the message's own
// text when it is already /plan edit (a caption), else "/plan edit".
func EditCommand(text, botName string) string {
	if IsEditCommand(text, botName) {
		return text
	}
	return "/plan edit"
}

// IsEditCommand reports whether text is a /plan edit command.
func IsEditCommand(text, botName string) bool {
	r := commands.Parse(text, botName)
	return r.Kind == commands.IsCommand && r.Cmd.Name == commands.Edit
}
