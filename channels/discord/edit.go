package discord

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/core"
)

// An edited plan file (docs/design.md §13) arrives attached to a reply to the plan's
// message, or to a /plan edit message. Its download (within the size limit) runs beside
// the gateway goroutine; later messages wait for it, so the engine gets gateway order.

// isPlanEdit reports whether m answers a plan with a file.
func isPlanEdit(m *discordgo.Message, text string, replyToBot bool) bool {
	if len(m.Attachments) == 0 || m.Attachments[0] == nil {
		return false
	}
	return replyToBot || channels.IsEditCommand(text, "")
}

// editPrepare returns what must happen to m's work before it is delivered: the download of
// its attachment when it is a plan edit; nil otherwise.
func (c *Channel) editPrepare(ctx context.Context, m *discordgo.Message, msg core.Message) func(*work) {
	if !channels.IsEditCommand(msg.Text, "") || len(m.Attachments) == 0 || m.Attachments[0] == nil {
		return nil
	}
	a := m.Attachments[0]
	return func(w *work) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.tune.retry.AttemptTime)
		defer cancel()
		f, err := channels.FetchPlanFile(ctx, a.Filename, a.ContentType, int64(a.Size), func(ctx context.Context) (io.ReadCloser, error) {
			return c.download(ctx, a.URL)
		})
		if err != nil {
			c.log.Error("downloading an edited plan file", "chat", m.ChannelID, "err", c.scrub(err))
			f = core.File{Name: a.Filename, MIME: a.ContentType}
		}
		w.msg.Attachments = []core.File{f}
	}
}

// download opens an attachment's URL with the session's client, only on Discord's CDN.
func (c *Channel) download(ctx context.Context, raw string) (io.ReadCloser, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || (u.Host != "cdn.discordapp.com" && u.Host != "media.discordapp.net") {
		return nil, fmt.Errorf("attachment URL %q is not on Discord's CDN", raw)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.s.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("discord answered %d to the attachment download", resp.StatusCode)
	}
	return resp.Body, nil
}

// fetchChain keeps gateway order while downloads run: a delivery after one that is still
// downloading waits for it.
type fetchChain struct {
	mu   sync.Mutex
	tail chan struct{} // closed when the last chained delivery is done; nil = none
}

// deliver hands w to d, after prepare (if any) and after every earlier chained delivery.
func (f *fetchChain) deliver(d *dispatcher, w work, prepare func(*work)) {
	f.mu.Lock()
	prev := f.tail
	if prepare == nil && (prev == nil || closed(prev)) {
		f.mu.Unlock()
		d.deliver(w)
		return
	}
	done := make(chan struct{})
	f.tail = done
	f.mu.Unlock()
	go func() {
		defer close(done)
		if prepare != nil {
			prepare(&w)
		}
		if prev != nil {
			<-prev
		}
		d.deliver(w)
	}()
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
