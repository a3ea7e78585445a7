package slack

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/plangate/plangate/core/conf"
)

// Probe checks cfg's bot token with auth.test, for plangate doctor: the team and bot in
// words, or why not, with the tokens kept out of the error.
func Probe(ctx context.Context, cfg Config) (string, error) {
	api := cmp.Or(cfg.APIURL, defaultAPIURL)
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	who, err := slackgo.New(cfg.BotToken, slackgo.OptionAPIURL(api),
		slackgo.OptionHTTPClient(&http.Client{Timeout: 10 * time.Second})).AuthTestContext(ctx)
	if err != nil {
		err = conf.Secrets(cfg.BotToken, cfg.AppToken).Error(err)
		if err.Error() == "invalid_auth" || err.Error() == "not_authed" || err.Error() == "token_revoked" {
			return "", fmt.Errorf("slack rejected the bot token (%v); check channels.slack.bot_token", err)
		}
		return "", err
	}
	return fmt.Sprintf("team %s (%s), bot %s (%s)", who.Team, who.TeamID, who.User, who.UserID), nil
}
