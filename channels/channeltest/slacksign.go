package channeltest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// SlackSignature is X-Slack-Signature as Slack computes it: v0= and the hex HMAC-SHA256
// of "v0:{timestamp}:{raw body}" with the signing secret. Tests sign their requests with
// it, apart from the adapter's own verifier, so a mistake there is not mirrored here.
func SlackSignature(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:", ts)
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}
