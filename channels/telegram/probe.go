package telegram

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-telegram/bot"

	"github.com/plangate/plangate/core/conf"
)

// Probe asks Telegram who the bot is (getMe) with cfg's token, for plangate doctor: the
// bot in words, or why not, with the token kept out of the error.
func Probe(ctx context.Context, cfg Config) (string, error) {
	scrub := conf.Secrets(cfg.Token).Error
	hc := &http.Client{Timeout: 10 * time.Second}
	b, err := bot.New(cfg.Token, bot.WithSkipGetMe(), bot.WithServerURL(cmp.Or(cfg.APIURL, "https://api.telegram.org")),
		bot.WithHTTPClient(10*time.Second, hc))
	if err != nil {
		return "", scrub(err)
	}
	me, err := b.GetMe(ctx)
	if err != nil {
		return "", scrub(explainAuth(err))
	}
	return fmt.Sprintf("bot @%s (id %d)", me.Username, me.ID), nil
}
