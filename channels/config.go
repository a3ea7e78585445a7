package channels

import (
	"net/url"

	"github.com/plangate/plangate/core/conf"
)

// Each adapter package owns its section of the config file: a Config type that
// cmd/plangate decodes strictly, Defaults, Validate and Describe. Validate reports each
// problem as a *conf.KeyError naming the key relative to the section, so the loader can
// prefix the section's path and the file's line. The helpers here keep every section's
// messages and summaries in one voice and free of secrets.

// CheckURL reports an api_url-style value that is set but not an absolute http(s) URL
// with a host. The value is not echoed: a URL may carry credentials.
func CheckURL(key, raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	return conf.Invalid(key, "is not an http:// or https:// URL")
}

// CheckLongReplyAsFile reports a negative long_reply_as_file threshold.
func CheckLongReplyAsFile(key string, n int) error {
	if n < 0 {
		return conf.Invalid(key, "is %d: use 0 (never) or a character count", n)
	}
	return nil
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

// CheckPlatform checks the keys every platform section has: long_reply_as_file, api_url
// and the token (named tokenKey), required only when the channel is enabled.
func CheckPlatform(enabled bool, tokenKey, token, apiURL string, longReplyAsFile int) []error {
	errs := []error{
		CheckLongReplyAsFile("long_reply_as_file", longReplyAsFile),
		CheckURL("api_url", apiURL),
	}
	if enabled && token == "" {
		errs = append(errs, conf.Unset(tokenKey))
	}
	return errs
}

// ModeSecret reports a secret that mode needs but that is unset while the channel is
// enabled; env is the variable that sets it.
func ModeSecret(enabled bool, key, secret, mode, env string) error {
	if enabled && secret == "" {
		return conf.Invalid(key, "is not set: mode %s needs it (set %s)", mode, env)
	}
	return nil
}

// Summary is a platform's line for `plangate config check`: whether its token is set, the
// section's own notes (", webhook, …") and the API note.
func Summary(name, tokenLabel, token, notes, apiURL string) string {
	return name + " (" + tokenLabel + " " + SetOrNot(token) + notes + APINote(apiURL) + ")"
}
