package channels

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Each adapter package owns its section of the config file: a Config type with yaml tags
// that cmd/plangate decodes strictly, a Defaults function, Validate and Describe. Validate
// reports each problem as a *KeyError naming the key relative to the section, so the
// loader can put the section's path and the file's line in front of it and name the
// environment variable a missing secret comes from. The helpers here keep every section's
// messages and summaries in one voice and free of secrets; cmd/plangate's own sections
// use them too.

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
	return BadValue(key, got, "expected %s", orList(allowed))
}

func orList(items []string) string {
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

// CheckURL reports an api_url-style value that is set but not an http(s) URL. The value
// is not echoed: a URL may carry credentials.
func CheckURL(key, raw string) error {
	if raw == "" || IsHTTPURL(raw) {
		return nil
	}
	return Invalid(key, "is not an http:// or https:// URL")
}

// CheckLongReplyAsFile reports a negative long_reply_as_file threshold.
func CheckLongReplyAsFile(key string, n int) error {
	if n < 0 {
		return Invalid(key, "is %d: use 0 (never) or a character count", n)
	}
	return nil
}

// IsHTTPURL reports whether raw is an absolute http:// or https:// URL with a host.
func IsHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// SetOrNot describes a secret without showing it.
func SetOrNot(secret string) string {
	if secret == "" {
		return "not set"
	}
	return "set"
}

// SafeURL keeps scheme, host and path: user info and query strings may hold credentials.
func SafeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// APINote is the ", api URL" part of a channel's summary; "" when the default API is used.
func APINote(apiURL string) string {
	if apiURL == "" {
		return ""
	}
	return ", api " + SafeURL(apiURL)
}

// CheckPlatform checks the keys every platform section has alike: long_reply_as_file,
// api_url and the token (named tokenKey), which is required only when the channel is
// enabled. The section appends its own checks.
func CheckPlatform(enabled bool, tokenKey, token, apiURL string, longReplyAsFile int) []error {
	errs := []error{
		CheckLongReplyAsFile("long_reply_as_file", longReplyAsFile),
		CheckURL("api_url", apiURL),
	}
	if enabled && token == "" {
		errs = append(errs, Unset(tokenKey))
	}
	return errs
}

// ModeSecret reports a secret that mode needs but that is unset while the channel is
// enabled; env is the variable that sets it.
func ModeSecret(enabled bool, key, secret, mode, env string) error {
	if enabled && secret == "" {
		return Invalid(key, "is not set: mode %s needs it (set %s)", mode, env)
	}
	return nil
}

// Summary is a platform's line for `plangate config check`: whether its token is set
// (never the token), the section's own notes (", webhook, …") and the API note.
func Summary(name, tokenLabel, token, notes, apiURL string) string {
	return name + " (" + tokenLabel + " " + SetOrNot(token) + notes + APINote(apiURL) + ")"
}
