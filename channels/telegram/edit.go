package telegram

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// An edited plan file (docs/design.md §13) arrives as a document in reply to the plan's
// message, or with a /plan edit caption. It is fetched with getFile and a download from
// the Bot API's file URL, within the size limit.

// isPlanEdit reports whether m answers a plan with a file.
func (c *Channel) isPlanEdit(m *models.Message, rt *models.Message, text string) bool {
	if m.Document == nil {
		return false
	}
	if channels.IsEditCommand(text, c.username) {
		return true
	}
	return rt != nil && rt.From != nil && rt.From.ID == c.botID && rt.Document != nil
}

// editedFile downloads m's document; a failed one is handed on without data, so the person
// is told to send it again. A shutdown does not cut it short; AttemptTime bounds it.
func (c *Channel) editedFile(ctx context.Context, m *models.Message) core.File {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.tune.retry.AttemptTime)
	defer cancel()
	d := m.Document
	f, err := channels.FetchPlanFile(ctx, d.FileName, d.MimeType, d.FileSize, func(ctx context.Context) (io.ReadCloser, error) {
		return c.download(ctx, m.Chat.ID, d.FileID)
	})
	if err != nil {
		c.log.Error("downloading an edited plan file", "chat", m.Chat.ID, "err", c.scrub(err))
		return core.File{Name: d.FileName, MIME: d.MimeType}
	}
	return f
}

// download asks where the file is (getFile) and opens it. The file URL holds the token;
// errors are scrubbed by the caller.
func (c *Channel) download(ctx context.Context, chat int64, fileID string) (io.ReadCloser, error) {
	var file *models.File
	err := c.do(ctx, chat, false, "getFile", func(ctx context.Context) error {
		var err error
		file, err = c.b.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
		return err
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.b.FileDownloadLink(file), nil)
	if err != nil {
		return nil, c.scrub(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.scrub(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("telegram answered %d to the file download", resp.StatusCode)
	}
	return resp.Body, nil
}
