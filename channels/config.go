package channels

import (
	"errors"
	"fmt"
	"net/url"
)

// Each adapter package owns its section of the config file: a Config type with yaml tags,
// a Defaults function, Validate and Describe. What they share to do that lives here, so the
// adapters report problems and summaries in one voice and cmd/plangate can place them.

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
}

func (e *KeyError) Error() string {
	if e.Unset {
		return e.Key + " " + e.Msg + ": set " + e.Key
	}
	return e.Key + " " + e.Msg
}

// Invalid returns a *KeyError for key with a message made from format and args.
func Invalid(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
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
