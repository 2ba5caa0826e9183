package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve listens on plain HTTP and its docs say to put it behind TLS: behind
// a TLS proxy the request it sees has no TLS, yet the browser is on https.
// The session cookie must then be Secure, as the docs promise ("Secure over
// TLS"): the browser's Origin, or the proxy's X-Forwarded-Proto, says so.
func TestServeLoginCookieSecureBehindTLSProxy(t *testing.T) {
	const token = "correct horse battery staple"
	login := newTokenAuth(token).loginHandler()
	for name, edit := range map[string]func(*http.Request){
		"Origin":            func(r *http.Request) { r.Header.Set("Origin", "https://dash.example") },
		"X-Forwarded-Proto": func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "https") },
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://dash.example/login",
				strings.NewReader(url.Values{"token": {token}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			edit(r)
			w := httptest.NewRecorder()
			login.ServeHTTP(w, r)
			require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
			cookies := w.Result().Cookies()
			require.Len(t, cookies, 1)
			assert.True(t, cookies[0].Secure, "session cookie set for an https page without Secure")
		})
	}
	// Plain http, as on a loopback address reached through a tunnel: a
	// Secure cookie would never come back.
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/login",
		strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	login.ServeHTTP(w, r)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.False(t, w.Result().Cookies()[0].Secure)
}
