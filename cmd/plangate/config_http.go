package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core/conf"
)

// HTTPConfig is the http section (docs/design.md §10): one server for the webhooks,
// /healthz, /readyz, /metrics and the admin API, off unless Listen is set.
type HTTPConfig struct {
	Listen     string `yaml:"listen"`      // host:port; "" = no HTTP server; port 0 = any free port
	PublicURL  string `yaml:"public_url"`  // where the platforms reach Listen, for webhooks
	AdminToken string `yaml:"admin_token"` // secret; one token, named "admin"; "" = none
	// AdminTokens are named tokens: each is one operator, "admin:<name>" in approvals and
	// audit rows. Not together with AdminToken. None at all = admin API and /debug/pprof/
	// off (404).
	// Each entry's name is [a-z0-9._-], at most 32, starting with a letter or digit; its
	// token is secret.
	AdminTokens []httpserver.AdminToken `yaml:"admin_tokens"`
	MaxBody     ByteSize                `yaml:"max_body"` // request body limit of every route
}

// adminNameRE is an admin token's name: it becomes "admin:<name>", an approver's id.
var adminNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)

// Limits of http.max_body: below 1 KiB no platform's event fits; above 1 GiB a request
// could hold the memory of a small host.
const (
	minMaxBody ByteSize = 1 << 10
	maxMaxBody ByteSize = 1 << 30
	// minAdminToken keeps the admin token out of guessing range.
	minAdminToken = 16
)

// server is the section as httpserver takes it.
func (h HTTPConfig) server() httpserver.Config {
	return httpserver.Config{Listen: h.Listen, PublicURL: h.PublicURL, AdminToken: h.AdminToken, AdminTokens: h.AdminTokens,
		MaxBody: int64(h.MaxBody)}
}

// adminOn reports whether any admin token is configured.
func (h HTTPConfig) adminOn() bool { return h.AdminToken != "" || len(h.AdminTokens) > 0 }

// checkAdminToken checks one token's value; key names it in the message.
func checkAdminToken(key, t string) error {
	if len(t) < minAdminToken {
		return conf.Invalid(key, "is shorter than %d characters: use a long random value, e.g. from openssl rand -hex 32", minAdminToken)
	}
	if strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return conf.Invalid(key, "contains a space or control character: it is sent in an HTTP header")
	}
	return nil
}

// adminTokenProblems checks http.admin_tokens: names safe and unique, tokens long enough
// and distinct (a token shared by two names could not say who used it).
func (h HTTPConfig) adminTokenProblems() []error {
	var errs []error
	if h.AdminToken != "" && len(h.AdminTokens) > 0 {
		errs = append(errs, conf.Invalid("admin_token",
			"is set together with http.admin_tokens: give every operator a named token in admin_tokens and leave admin_token empty (unset its variable)"))
	}
	names, tokens := map[string]int{}, map[string]int{}
	for i, t := range h.AdminTokens {
		key := fmt.Sprintf("admin_tokens[%d]", i)
		switch j, dup := names[t.Name]; {
		case t.Name == "":
			errs = append(errs, conf.Invalid(key+".name", "is empty: name the operator who holds this token (approvals name them admin:<name>)"))
		case !adminNameRE.MatchString(t.Name):
			errs = append(errs, conf.BadValue(key+".name", t.Name, "may hold only a-z, 0-9, \".\", \"_\" and \"-\" (at most 32, starting with a letter or digit)"))
		case dup:
			errs = append(errs, conf.BadValue(key+".name", t.Name, "is also the name of admin_tokens[%d]: one name per operator", j))
		default:
			names[t.Name] = i
		}
		if t.Token == "" {
			errs = append(errs, conf.Unset(key+".token"))
			continue
		}
		if err := checkAdminToken(key+".token", t.Token); err != nil {
			errs = append(errs, err)
			continue
		}
		if j, dup := tokens[t.Token]; dup {
			errs = append(errs, conf.Invalid(key+".token", "is the same as admin_tokens[%d].token: one token per operator, or the two could not be told apart", j))
		}
		tokens[t.Token] = i
	}
	return errs
}

// Validate checks the http section.
func (h HTTPConfig) Validate() error {
	var errs []error
	if h.Listen != "" {
		errs = append(errs, checkListen(h.Listen))
	}
	if h.PublicURL != "" {
		errs = append(errs, checkPublicURL(h.PublicURL))
		if h.Listen == "" {
			errs = append(errs, conf.Invalid("public_url", "is set but http.listen is empty: set http.listen to the address the proxy forwards to"))
		}
	}
	if t := h.AdminToken; t != "" {
		errs = append(errs, checkAdminToken("admin_token", t))
	}
	errs = append(errs, h.adminTokenProblems()...)
	if h.MaxBody < minMaxBody || h.MaxBody > maxMaxBody {
		errs = append(errs, conf.Invalid("max_body", "is %s: it must be between %s and %s", h.MaxBody, minMaxBody, maxMaxBody))
	}
	return errors.Join(errs...)
}

// checkListen accepts host:port with a numeric port; an empty host listens on every
// interface.
func checkListen(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return conf.BadValue("listen", listen, "expected host:port such as 127.0.0.1:8080 or :8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return conf.BadValue("listen", listen, "the port must be a number from 0 to 65535")
	}
	if strings.ContainsFunc(host, unicode.IsSpace) {
		return conf.BadValue("listen", listen, "the host contains a space")
	}
	return nil
}

// checkPublicURL wants https: the platforms send secrets and people's messages to it.
// Plain http is accepted only for a loopback host, for tests and local fakes. The value
// is shown without user info or query, which could hold credentials.
func checkPublicURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return conf.Invalid("public_url", "is not an https:// URL such as https://bot.example.com")
	}
	shown := channels.SafeURL(raw)
	switch {
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return conf.Invalid("public_url", "(%s) has a user, query or fragment: give only https://host[:port][/path]", shown)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return conf.Invalid("public_url", "(%s) is not https: platforms deliver webhooks only to HTTPS (http:// is accepted for a loopback host alone)", shown)
	}
	return nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// describe summarises the section for `plangate config check`, the token only as set or not.
func (h HTTPConfig) describe() string {
	if h.Listen == "" {
		return "off (http.listen is empty)"
	}
	admin := "admin API off (no admin_token)"
	switch {
	case len(h.AdminTokens) > 0:
		names := make([]string, len(h.AdminTokens))
		for i, t := range h.AdminTokens {
			names[i] = "admin:" + t.Name
		}
		admin = fmt.Sprintf("admin API on (%d named tokens: %s)", len(names), strings.Join(names, ", "))
	case h.AdminToken != "":
		admin = "admin API on (token set, acting as admin:admin)"
	}
	public := ""
	if h.PublicURL != "" {
		public = ", public " + channels.SafeURL(h.PublicURL)
	}
	return fmt.Sprintf("%s%s, %s, max body %s", h.Listen, public, admin, h.MaxBody)
}

// ByteSize is a size in bytes, written in the file as a whole number of bytes or with a
// binary unit: 1048576, 512KiB, 1MiB, 1GiB.
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	factor ByteSize
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// UnmarshalText reads "1MiB", "512KiB", "2048" or "2048B". Decimal units (KB, MB) are
// refused rather than guessed: tools disagree on whether they mean 1000 or 1024.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	factor, digits := ByteSize(1), s
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			factor, digits = u.factor, strings.TrimSpace(n)
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || n > maxByteSize/int64(factor) {
		return fmt.Errorf("%q is not a size such as 1MiB, 512KiB or 1048576", s)
	}
	*b = ByteSize(n) * factor
	return nil
}

// maxByteSize bounds what a ByteSize reads (1 TiB), far above any key's own limit, so
// no unit overflows.
const maxByteSize = 1 << 40

// String writes the size with the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range sizeUnits {
		if b != 0 && b%u.factor == 0 {
			return strconv.FormatInt(int64(b/u.factor), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}
