package main

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Every section of ChannelsConfig is one channel with one row, under the section's own
// name, and every row has its section and its edit hint: a channel added to one and not
// the other fails here rather than being silently left out of config checks or serve.
func TestChannelTableMatchesTheSections(t *testing.T) {
	var sections []string
	for f := range reflect.TypeFor[ChannelsConfig]().Fields() {
		if name := yamlName(f); name != "" && f.Type != reflect.TypeFor[time.Duration]() {
			sections = append(sections, name)
		}
	}
	if rows := channelNames(nil); !slices.Equal(rows, sections) {
		t.Fatalf("channel table rows %v, ChannelsConfig sections %v: want one row per section, in order", rows, sections)
	}
	ch := defaultChannels()
	for _, r := range channelTable {
		if r.editHint == "" {
			t.Errorf("%s: no edit hint", r.name)
		}
		if r.section(&ch) == nil || r.section(&ch).Describe() == "" {
			t.Errorf("%s: no section summary", r.name)
		}
	}
}
