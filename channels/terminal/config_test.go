package terminal

import (
	"testing"

	"github.com/goccy/go-yaml"
)

func TestConfigFromFile(t *testing.T) {
	c := Defaults()
	if !c.Enabled || c.Validate() != nil || c.Describe() != "terminal" {
		t.Errorf("Defaults() = %+v, Validate %v, Describe %q", c, c.Validate(), c.Describe())
	}
	if err := yaml.UnmarshalWithOptions([]byte("enabled: false\nattachments_dir: out\n"), &c, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if c.Enabled || c.AttachmentsDir != "out" {
		t.Errorf("decoded %+v", c)
	}
	// The session and sender come from the command line, never from the file.
	for _, src := range []string{"session: x\n", "sender: x\n"} {
		if err := yaml.UnmarshalWithOptions([]byte(src), &c, yaml.Strict()); err == nil {
			t.Errorf("%q was accepted", src)
		}
	}
}
