package slack

import (
	"cmp"
	"context"
	"io"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/machine"
)

// An edited plan file (docs/design.md §13) arrives shared in the plan's thread, or with a
// /plan edit message. It is downloaded from its url_private with the bot token (which the
// client sends only to Slack's hosts or the API host), within the size limit.

// planEditFile reports whether a posted message answers a plan with a file: /plan edit
// with a file, or a text file shared in a thread.
func planEditFile(p posted, text string) bool {
	if len(p.files) == 0 {
		return false
	}
	if channels.IsEditCommand(text, "") {
		return true
	}
	return p.thread != "" && p.thread != p.ts && machine.IsTextFile(p.files[0].Name, p.files[0].Mimetype)
}

// sharedInThread reports whether a channel message event is a file shared in a thread,
// the one kind of channel message the bot reads without a mention.
func sharedInThread(subtype, thread, ts string, files []slackgo.File) bool {
	return subtype == "file_share" && thread != "" && thread != ts && len(files) > 0 &&
		machine.IsTextFile(files[0].Name, files[0].Mimetype)
}

// editedFile downloads a message's file; a failed one is handed on without data, so the
// person is told to send it again. A shutdown does not cut it short; attemptTime bounds it.
func (c *Channel) editedFile(ctx context.Context, f slackgo.File) core.File {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.tune.retry.AttemptTime)
	defer cancel()
	url := cmp.Or(f.URLPrivateDownload, f.URLPrivate)
	got, err := channels.FetchPlanFile(ctx, f.Name, f.Mimetype, int64(f.Size), func(ctx context.Context) (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			// A reader that stops at the limit closes the pipe, which ends the download.
			pw.CloseWithError(c.api.GetFileContext(ctx, url, pw))
		}()
		return pr, nil
	})
	if err != nil {
		c.log.Error("downloading an edited plan file", "file", f.ID, "err", c.scrub(err))
		return core.File{Name: f.Name, MIME: f.Mimetype}
	}
	return got
}

// editMessage turns m into /plan edit with the downloaded file.
func (c *Channel) editMessage(ctx context.Context, m *core.Message, p posted) {
	m.Text = channels.EditCommand(strings.TrimSpace(m.Text), "")
	m.Attachments = []core.File{c.editedFile(ctx, p.files[0])}
}
