package discord

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/core/conf"
)

// Probe asks Discord for the bot's application with cfg's token, for plangate doctor:
// the application in words, or why not, with the token kept out of the error. A
// configured application_id must be the token's application. The library's Application
// call takes no context; the client's timeout bounds it.
func Probe(cfg Config) (string, error) {
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	hc, err := rewritingClient(cfg.HTTPClient, cfg.APIURL)
	if err != nil {
		return "", err
	}
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return "", errors.New("creating the discord session failed")
	}
	s.Client = hc
	app, err := s.Application("@me")
	if err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusUnauthorized {
			return "", errors.New("discord rejected the bot token (401 Unauthorized); check channels.discord.token")
		}
		return "", conf.Secrets(token).Error(err)
	}
	if id := strings.TrimSpace(cfg.ApplicationID); id != "" && id != app.ID {
		return "", fmt.Errorf("the token belongs to application %s (%s), but channels.discord.application_id is %s", app.Name, app.ID, id)
	}
	return fmt.Sprintf("application %s (%s)", app.Name, app.ID), nil
}
