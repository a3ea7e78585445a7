package conf

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Scrubber takes secrets out of text. Secrets makes the usual one; an adapter whose
// secrets also follow a pattern (interaction tokens in URLs) composes its own.
type Scrubber func(string) string

// Secrets is the scrubber of these secrets in the forms they take in a request: as they
// are, path-escaped and query-escaped.
func Secrets(secrets ...string) Scrubber { return SecretsAs("<token>", secrets...) }

// SecretsAs is Secrets writing marker in place of each secret.
func SecretsAs(marker string, secrets ...string) Scrubber {
	var all []string
	for _, s := range secrets {
		if s != "" {
			all = append(all, s, url.PathEscape(s), url.QueryEscape(s))
		}
	}
	slices.SortStableFunc(all, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	all = slices.Compact(all)
	return func(s string) string {
		for _, sec := range all {
			s = strings.ReplaceAll(s, sec, marker)
		}
		return s
	}
}

// Error returns err with its text scrubbed. The result still answers errors.Is and
// errors.As for err's chain, so a caller can tell a rate limit or a library's typed answer
// after scrubbing, but it does not unwrap: the chain's own texts may hold the secret, and
// what unwraps gets printed. (A caller that takes a typed error out with errors.As gets
// the library's value: it reads its fields, it does not print it.)
func (s Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	if sc, ok := err.(*scrubbedError); ok {
		return sc
	}
	return &scrubbedError{msg: s(err.Error()), orig: err}
}

// scrubbedError is an error whose text had the secrets removed.
type scrubbedError struct {
	msg  string
	orig error
}

func (e *scrubbedError) Error() string        { return e.msg }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.orig, target) }
func (e *scrubbedError) As(target any) bool   { return errors.As(e.orig, target) }
