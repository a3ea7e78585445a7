package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/plangate/plangate/channels/httpserver"
)

// Sign-in: the token typed at /login is compared in constant time with every configured
// token, and a match sets a self-contained session cookie (user, random nonce, expiry,
// and an HMAC keyed by a hash of the user's token), so it works on every replica and
// after a restart, and changing a token signs its user out everywhere. Sign-out records
// the nonce in the store until the cookie would have expired, so a copy of it is refused
// by every replica on the database.
//
// Every POST carries a CSRF token, an HMAC of the user's key over the sign-in's nonce, so
// a token read from one sign-in is refused with another; the sign-in form, which has no
// user yet, uses a double-submit cookie instead.
const (
	sessionCookie = "plangate_web"
	loginCookie   = "plangate_login"
)

// viewer is the signed-in user of a request.
type viewer struct {
	Name    string
	nonce   string
	expires time.Time // when the sign-in's cookie expires
	CSRF    string
}

func userKey(token string) []byte {
	sum := sha256.Sum256([]byte("plangate web sign-in\x00" + token))
	return sum[:]
}

func mac(key []byte, msg string) string {
	return base64.RawURLEncoding.EncodeToString(sum(key, msg))
}

// csrf is the CSRF token of user name's sign-in with nonce ("" for an unknown user).
func (c *Channel) csrf(name, nonce string) string {
	key, ok := c.keys[name]
	if !ok {
		return ""
	}
	return hex.EncodeToString(sum(key, "csrf\x00"+nonce))[:32]
}

func sum(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// match returns the user whose token is tok. Every token is compared, in constant time,
// so the answer's timing does not say how much of a token was right or whose it was.
func (c *Channel) match(tok string) (string, bool) {
	found := ""
	for _, name := range c.cfg.userNames() {
		if httpserver.SecretEqual(tok, c.cfg.Users[name]) && tok != "" {
			found = name
		}
	}
	return found, found != ""
}

func (c *Channel) issue(w http.ResponseWriter, name string) {
	exp := c.d.Now().Add(c.cfg.SessionTTL)
	body := name + "|" + randomID(10) + "|" + strconv.FormatInt(exp.Unix(), 10)
	val := base64.RawURLEncoding.EncodeToString([]byte(body)) + "." + mac(c.keys[name], body)
	// MaxAge rather than Expires: the browser counts it from its own clock.
	c.setCookie(w, sessionCookie, val, "/", int(c.cfg.SessionTTL/time.Second))
}

// setCookie sets a cookie that scripts cannot read and other sites cannot send; a
// negative maxAge deletes it.
func (c *Channel) setCookie(w http.ResponseWriter, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.cfg.Secure})
}

// who returns the signed-in user of r.
func (c *Channel) who(r *http.Request) (viewer, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return viewer{}, false
	}
	enc, sig, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return viewer{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return viewer{}, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return viewer{}, false
	}
	name, nonce := parts[0], parts[1]
	key, known := c.keys[name]
	if !known || !hmac.Equal([]byte(sig), []byte(mac(key, string(raw)))) {
		return viewer{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !c.d.Now().Before(time.Unix(exp, 0)) {
		return viewer{}, false
	}
	gone, err := c.d.Store.SignedOut(r.Context(), nonce)
	if err != nil {
		// Refused rather than let in: the store cannot say whether it was signed out.
		c.log.Warn("reading sign-outs", "user", name, "err", err)
		return viewer{}, false
	}
	if gone {
		return viewer{}, false
	}
	return viewer{Name: name, nonce: nonce, expires: time.Unix(exp, 0), CSRF: c.csrf(name, nonce)}, true
}

// holds reports whether v's sign-in still holds: not expired and not signed out. A
// long-lived request (a live stream) checks it now and then.
func (c *Channel) holds(ctx context.Context, v viewer) bool {
	if !c.d.Now().Before(v.expires) {
		return false
	}
	gone, err := c.d.Store.SignedOut(ctx, v.nonce)
	return err == nil && !gone
}

// page wraps a handler for signed-in users; others are sent to the sign-in form (pages)
// or refused with 401 (everything else).
func (c *Channel) page(h func(w http.ResponseWriter, r *http.Request, v viewer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secureHeaders(w)
		v, ok := c.who(r)
		if !ok {
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "Sign in first: /login", http.StatusUnauthorized)
			return
		}
		h(w, r, v)
	})
}

// post wraps a form handler: signed in, and the form's CSRF token must be the user's.
func (c *Channel) post(h func(w http.ResponseWriter, r *http.Request, v viewer)) http.Handler {
	return c.page(func(w http.ResponseWriter, r *http.Request, v viewer) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The form could not be read.", http.StatusBadRequest)
			return
		}
		if got := r.PostForm.Get("csrf"); got == "" || !httpserver.SecretEqual(got, v.CSRF) {
			http.Error(w, "This form is out of date or came from another site (CSRF check failed). Reload the page and try again.", http.StatusForbidden)
			return
		}
		h(w, r, v)
	})
}

func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

type loginView struct {
	CSRF, Error string
}

func (c *Channel) loginForm(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w)
	if _, ok := c.who(r); ok {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.showLogin(w, http.StatusOK, "")
}

func (c *Channel) showLogin(w http.ResponseWriter, code int, why string) {
	tok := randomID(16)
	c.setCookie(w, loginCookie, tok, "/login", 3600)
	c.write(w, code, "login", loginView{CSRF: tok, Error: why})
}

func (c *Channel) login(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w)
	if err := r.ParseForm(); err != nil {
		c.showLogin(w, http.StatusBadRequest, "The form could not be read; try again.")
		return
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || ck.Value == "" || !httpserver.SecretEqual(r.PostForm.Get("csrf"), ck.Value) {
		c.showLogin(w, http.StatusForbidden, "The sign-in form was out of date; try again.")
		return
	}
	name, ok := c.match(r.PostForm.Get("token"))
	if !ok {
		c.d.WrongToken(r.Context())
		c.log.Info("wrong sign-in token", "remote", r.RemoteAddr)
		c.showLogin(w, http.StatusUnauthorized, "That token is not right. Check it and try again.")
		return
	}
	c.setCookie(w, loginCookie, "", "/login", -1)
	c.issue(w, name)
	c.log.Info("signed in", "user", name)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout records the sign-out in the store before it clears the cookie: a sign-out that
// could not be recorded is reported and the user stays signed in, since a copy of the
// cookie would still work.
func (c *Channel) logout(w http.ResponseWriter, r *http.Request, v viewer) {
	if err := c.d.Store.SignOut(r.Context(), v.nonce, v.expires); err != nil {
		c.log.Error("signing out", "user", v.Name, "err", err)
		http.Error(w, "Signing out failed: the gateway could not record it, so you are still signed in. Try again in a moment; details are in the gateway log.", http.StatusInternalServerError)
		return
	}
	if n, err := c.d.Store.PruneSignOuts(r.Context(), c.d.Now()); err != nil {
		c.log.Warn("pruning sign-outs", "err", err)
	} else if n > 0 {
		c.log.Debug("pruned expired sign-outs", "rows", n)
	}
	c.log.Info("signed out", "user", v.Name)
	c.setCookie(w, sessionCookie, "", "/", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// write renders a whole page.
func (c *Channel) write(w http.ResponseWriter, code int, name string, data any) {
	h, err := c.render(name, data)
	if err != nil {
		c.log.Error("rendering page", "page", name, "err", err)
		http.Error(w, "The page could not be rendered; details are in the gateway log.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(h))
}
