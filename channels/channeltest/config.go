package channeltest

import (
	"testing"

	"github.com/plangate/plangate/config"
)

// Problems renders what an adapter's Config.Validate returns, one "key message" line per
// problem in order, and fails the test if any problem does not name its key.
func Problems(t testing.TB, err error) []string {
	t.Helper()
	keys, rest := config.KeyErrors(err)
	if len(rest) > 0 {
		t.Fatalf("Validate returned errors that name no key: %v", rest)
	}
	var out []string
	for _, k := range keys {
		out = append(out, k.Error())
	}
	return out
}
