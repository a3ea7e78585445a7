package discord

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/plangate/plangate/core"
)

// TestRedTeamTimestampVariants: signed timestamps that spell an old, a negative or an
// out-of-range time in other ways (leading zeros, signs, spaces, exponents, the int64
// bounds) are refused with 401 and nothing is committed. A timestamp the signature
// covers cannot be respelled by someone replaying a captured request, so only a spelling
// of the current time passes.
func TestRedTeamTimestampVariants(t *testing.T) {
	clk := newTestClock()
	e := newEnv(t, func(e *env) {
		e.cfg.Now = clk.now
		httpInteractions(e)
	})
	now := strconv.FormatInt(clk.now().Unix(), 10)
	for i, ts := range []string{
		"0000978307200", "-978307200", "-" + now, " " + now, now + " ", "\t" + now,
		now + ".0", "1.7e9", "9223372036854775807", "-9223372036854775808", "99999999999999999999",
		"0x" + strconv.FormatInt(clk.now().Unix(), 16),
	} {
		id := "66600000" + strconv.Itoa(i)
		code, ans, err := e.hook.post(e.interactionBody(id), ts, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("signed at %q (the clock says %s): %d %s, want 401", ts, now, code, ans)
		}
		if seen, err := e.Store.SeenInbound(t.Context(), core.InboundKey{Channel: Name, Account: "G1", EventID: id}); err != nil || seen {
			t.Errorf("the interaction signed at %q was committed (%v)", ts, err)
		}
	}
	e.Idle()
	if ss, err := e.Store.Sessions(t.Context()); err != nil || len(ss) != 0 {
		t.Errorf("refused interactions made sessions %v (%v)", ss, err)
	}
}
