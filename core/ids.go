package core

import (
	"encoding/base32"
	"fmt"
	"io"
	"strings"
)

// newIDs draws the fresh ids trigger tr may need: a plan id and its approval id for a
// proposal or an edited plan, a question id for a question.
func newIDs(r io.Reader, tr Trigger) (NewIDs, error) {
	var ids NewIDs
	var err error
	switch tr {
	case TrigPropose, TrigAutoPropose, TrigEdit:
		if ids.Plan, err = newID(r, 6); err == nil {
			ids.Plan = "p" + ids.Plan
			ids.Approval, err = newID(r, 10)
		}
	case TrigAsk:
		ids.Question, err = newID(r, 8)
	}
	return ids, err
}

// newID returns n random bytes as lower-case base32 without padding.
func newID(r io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}
