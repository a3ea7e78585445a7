package channeltest

import (
	"strings"
	"testing"

	"github.com/plangate/plangate/core/conf"
)

// Problems renders what an adapter's Config.Validate returns, one "key message" line per
// problem in order, and fails the test if any problem does not name its key.
func Problems(t testing.TB, err error) []string {
	t.Helper()
	keys, rest := conf.KeyErrors(err)
	if len(rest) > 0 {
		t.Fatalf("Validate returned errors that name no key: %v", rest)
	}
	var out []string
	for _, k := range keys {
		out = append(out, k.Error())
	}
	return out
}

// ValidateCase is one row of an adapter's Config.Validate table: Edit changes the
// defaults, Want lists the problems as Problems renders them (nil: valid).
type ValidateCase[C any] struct {
	Name string
	Edit func(*C)
	Want []string
}

// RunValidate runs each case against a fresh copy of defaults().
func RunValidate[C conf.Validator](t *testing.T, defaults func() C, cases []ValidateCase[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			c := defaults()
			tc.Edit(&c)
			got, want := strings.Join(Problems(t, c.Validate()), "\n"), strings.Join(tc.Want, "\n")
			if got != want {
				t.Errorf("Validate() =\n%s\nwant\n%s", got, want)
			}
		})
	}
}
