package discord

import (
	"context"
	"regexp"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/commands"
)

// commandName is the application command's name, the same word as the typed command.
const commandName = "plan"

// Discord's limits on application commands.
const (
	maxDescription = 100
	maxOptionName  = 32
)

// planCommand is the /plan application command, generated from the command table: one
// subcommand per row but edit, each with one string option when the row takes arguments
// (required when the row says so); "[on|off]" offers its words as choices.
func planCommand() *discordgo.ApplicationCommand {
	desc := "Plan mode"
	for _, e := range commands.MenuEntries() {
		if e.Command == commandName {
			desc = e.Description
		}
	}
	dm := true
	cmd := &discordgo.ApplicationCommand{
		Name:         commandName,
		Description:  channels.Clip(desc, maxDescription),
		Type:         discordgo.ChatApplicationCommand,
		DMPermission: &dm,
	}
	for _, spec := range commands.Table() {
		if spec.Name == commands.Edit {
			continue // an edited plan file is an attachment on a reply to the plan, not an option
		}
		sub := &discordgo.ApplicationCommandOption{
			Type:        discordgo.ApplicationCommandOptionSubCommand,
			Name:        string(spec.Name),
			Description: channels.Clip(spec.Summary, maxDescription),
		}
		if spec.Args != "" {
			sub.Options = []*discordgo.ApplicationCommandOption{argOption(spec)}
		}
		cmd.Options = append(cmd.Options, sub)
	}
	return cmd
}

var (
	oneWord     = regexp.MustCompile(`^[A-Za-z]{3,}$`)
	wordChoices = regexp.MustCompile(`^[a-z]+(\|[a-z]+)+$`)
)

// argOption is the string option of a subcommand, named after its synopsis: "<feedback>"
// is "feedback", "[on|off]" a "choice" of on and off, anything else "text", described by
// the synopsis itself.
func argOption(spec commands.Spec) *discordgo.ApplicationCommandOption {
	inner := strings.TrimSpace(strings.Trim(spec.Args, "<>[]"))
	opt := &discordgo.ApplicationCommandOption{
		Type:        discordgo.ApplicationCommandOptionString,
		Name:        "text",
		Description: channels.Clip(inner, maxDescription),
		Required:    spec.ArgRequired,
	}
	switch {
	case oneWord.MatchString(inner):
		opt.Name = channels.Clip(strings.ToLower(inner), maxOptionName)
	case wordChoices.MatchString(inner):
		opt.Name = "choice"
		for _, w := range strings.Split(inner, "|") {
			opt.Choices = append(opt.Choices, &discordgo.ApplicationCommandOptionChoice{Name: w, Value: w})
		}
	}
	if !spec.ArgRequired {
		opt.Description = channels.Clip("optional: "+inner, maxDescription)
	}
	if spec.Name == commands.Revise {
		// Its synopsis has two parts; the option carries either as typed.
		opt.Name, opt.Description = "feedback", "optional: feedback, or 2: <comment> for a comment on step 2"
	}
	return opt
}

// commandText turns an invocation of /plan into the text a person would have typed, for
// the same parser, usage errors and all.
func commandText(data discordgo.ApplicationCommandInteractionData) string {
	parts := []string{"/" + commandName}
	for _, sub := range data.Options {
		if sub == nil {
			continue
		}
		if sub.Type == discordgo.ApplicationCommandOptionSubCommand {
			parts = append(parts, sub.Name)
			for _, o := range sub.Options {
				if v := optionString(o); v != "" {
					parts = append(parts, v)
				}
			}
			break
		}
		if v := optionString(sub); v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}

func optionString(o *discordgo.ApplicationCommandInteractionDataOption) string {
	if o == nil || o.Value == nil {
		return ""
	}
	if s, ok := o.Value.(string); ok {
		return strings.TrimSpace(s)
	}
	return ""
}

// registerCommands publishes /plan with a bulk overwrite, per guild in GuildIDs (where it
// appears at once) or globally. A failure costs the menu, not the typed commands.
func (c *Channel) registerCommands(ctx context.Context) {
	app := c.applicationID()
	cmds := []*discordgo.ApplicationCommand{planCommand()}
	guilds := c.cfg.GuildIDs
	if len(guilds) == 0 {
		guilds = []string{""}
	}
	for _, g := range guilds {
		err := c.do(ctx, "registering /plan", func(opts ...discordgo.RequestOption) error {
			_, err := c.s.ApplicationCommandBulkOverwrite(app, strings.TrimSpace(g), cmds, opts...)
			return err
		})
		if err != nil && ctx.Err() == nil {
			c.log.Error("registering the /plan command failed (typed /plan still works); check channels.discord.application_id", "guild", g, "err", err)
			continue
		}
		c.log.Debug("registered /plan", "guild", g)
	}
}
