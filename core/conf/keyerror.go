package conf

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Validator is a section that checks its own values; every problem it returns (joined
// with errors.Join) is a *KeyError.
type Validator interface {
	Validate() error
}

// KeyError is one invalid value in an adapter's config section. Key is relative to the
// section ("poll_timeout", "allowed_chats[2]"): the config loader prefixes the section's
// path and points at the key's line in the file.
type KeyError struct {
	Key string
	// Msg follows the key in the message: "is 10m: it must be between 1s and 5m". It never
	// quotes a secret.
	Msg string
	// Unset marks a required value left empty. The loader ends the message with what to
	// set, which only it knows: the environment variable the value was read from, else the
	// key itself.
	Unset bool
	// Value, when set, is the value found, quoted between the key and Msg: `key is "v": Msg`.
	// The loader shows "the value of VAR" instead when it came from the environment, where
	// a secret may have landed by mistake.
	Value *string
}

func (e *KeyError) Error() string {
	switch {
	case e.Unset:
		return e.Key + " " + e.Msg + ": set " + e.Key
	case e.Value != nil:
		return e.Key + " is " + strconv.Quote(*e.Value) + ": " + e.Msg
	}
	return e.Key + " " + e.Msg
}

// Invalid returns a *KeyError for key with a message made from format and args.
func Invalid(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// BadValue returns a *KeyError that shows the value found (see KeyError.Value).
func BadValue(key, value, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Value: &value}
}

// OneOf reports a value outside an enumeration, showing the value and the allowed ones.
func OneOf(key, got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	return BadValue(key, got, "expected %s", OrList(allowed))
}

// OrList joins items as "a", "a or b", "a, b or c".
func OrList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// Unset returns the *KeyError of a required value left empty.
func Unset(key string) error {
	return &KeyError{Key: key, Msg: "is empty", Unset: true}
}

// KeyErrors lists the *KeyError values in err, looking through errors.Join; rest holds
// whatever else err carries.
func KeyErrors(err error) (keys []*KeyError, rest []error) {
	if err == nil {
		return nil, nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			k, r := KeyErrors(e)
			keys, rest = append(keys, k...), append(rest, r...)
		}
		return keys, rest
	}
	var ke *KeyError
	if errors.As(err, &ke) {
		return []*KeyError{ke}, nil
	}
	return nil, []error{err}
}
