package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// sessionCookie holds a logged-in operator's session: a value derived from
// the token, never the token itself, so that a cookie that leaks is not a
// bearer token for scripts. It dies with the browser session.
const sessionCookie = "shedlock_session"

// tokenAuth allows the dashboard's actions to requests that carry the
// serve command's token, as "Authorization: Bearer <token>" or through the
// session cookie its login form sets.
type tokenAuth struct {
	token   string
	session string
	cop     *http.CrossOriginProtection
}

func newTokenAuth(token string) *tokenAuth {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("shedlock serve session"))
	return &tokenAuth{token: token, session: hex.EncodeToString(mac.Sum(nil)), cop: http.NewCrossOriginProtection()}
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// authorize is the dashboard's authorize hook.
func (a *tokenAuth) authorize(r *http.Request, _ shedlockhttp.Action) error {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if equal(bearer, a.token) {
			return nil
		}
		return errors.New("a wrong bearer token")
	}
	if c, err := r.Cookie(sessionCookie); err == nil && equal(c.Value, a.session) {
		return nil
	}
	return errors.New("log in first (or send the token as a bearer header)")
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shedlock · log in</title>
<link rel="stylesheet" href="static/app.css"></head>
<body><header><h1>Log in</h1></header>
{{if .}}<p class="error">{{.}}</p>{{end}}
<form method="post" action="login" id="login">
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus></label>
<button type="submit">Log in</button>
</form>
<p><a href="./">Back to the dashboard (read-only)</a></p>
</body></html>
`))

// loginHandler shows the login form (GET) and checks it (POST): the right
// token sets the session cookie and goes back to the dashboard.
func (a *tokenAuth) loginHandler() http.Handler {
	return a.cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			_ = loginPage.Execute(w, "")
		case http.MethodPost:
			r.Body = http.MaxBytesReader(w, r.Body, 4096)
			if !equal(r.PostFormValue("token"), a.token) {
				w.WriteHeader(http.StatusForbidden)
				_ = loginPage.Execute(w, "That is not the token.")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: a.session, Path: "/", HttpOnly: true,
				Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
			w.Header().Set("Location", "./")
			w.WriteHeader(http.StatusSeeOther)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		}
	}))
}

// overTLS reports whether the browser reached the login over https: served
// with TLS, or behind a TLS proxy (serve's own is plain HTTP), as the
// browser's Origin or the proxy's X-Forwarded-Proto tells. A client that
// forges either only makes its own cookie stricter.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(r.Header.Get("Origin"), "https://") ||
		strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// logoutHandler ends the session (POST).
func (a *tokenAuth) logoutHandler() http.Handler {
	return a.cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w.Header())
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST", http.StatusMethodNotAllowed)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode})
		w.Header().Set("Location", "./")
		w.WriteHeader(http.StatusSeeOther)
	}))
}

// pageHeaders are the dashboard's own: nothing from elsewhere, no framing.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "+
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}
