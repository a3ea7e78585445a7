package machine

import (
	"encoding/base32"
	"fmt"
	"io"
	"strings"
)

// DrawIDs draws the fresh ids trigger tr may need: a plan id and its approval id for a
// proposal or an edited plan, a question id for a question.
func DrawIDs(r io.Reader, tr Trigger) (NewIDs, error) {
	var ids NewIDs
	var err error
	switch tr {
	case TrigPropose, TrigAutoPropose, TrigEdit:
		if ids.Plan, err = NewID(r, 6); err == nil {
			ids.Plan = "p" + ids.Plan
			ids.Approval, err = NewID(r, 10)
		}
	case TrigAsk:
		ids.Question, err = NewID(r, 8)
	}
	return ids, err
}

// NewID returns n random bytes as lower-case base32 without padding.
func NewID(r io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}
