package discord

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

// FuzzDecodeInteraction feeds interaction bodies to the decoder: it never panics, and one
// it accepts has an id, a type and (but for a PING) a token, which every answer needs.
func FuzzDecodeInteraction(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","application_id":"900","type":1,"token":"t","version":1}`,
		`{"id":"2","type":2,"token":"t","channel_id":"C1","guild_id":"G1","member":{"user":{"id":"7","username":"a"}},"data":{"id":"c","name":"plan","type":1,"options":[{"name":"status","type":1}]}}`,
		`{"id":"3","type":3,"token":"t","channel_id":"C1","user":{"id":"7"},"data":{"custom_id":"pg:a:x","component_type":2},"message":{"id":"9","channel_id":"C1"}}`,
		`{"id":"4","type":5,"token":"t","data":{"custom_id":"pg:m:x","components":[{"type":1,"components":[{"type":4,"custom_id":"feedback","value":"v"}]}]}}`,
		`{"id":"5","type":3,"token":"t","data":7}`, `{"type":"two"}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		i, err := decodeInteraction(body)
		if err != nil {
			return
		}
		if i.ID == "" || i.Type == 0 || (i.Type != discordgo.InteractionPing && i.Token == "") {
			t.Fatalf("accepted %q as %+v", body, i)
		}
		switch i.Type { // the accessors the adapter calls must not panic on what was accepted
		case discordgo.InteractionApplicationCommand:
			_ = i.ApplicationCommandData()
		case discordgo.InteractionMessageComponent:
			_ = i.MessageComponentData()
		case discordgo.InteractionModalSubmit:
			_ = i.ModalSubmitData()
		}
	})
}
