package shedlockhttp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// csrfHeader and csrfField carry the handler's token on an action: the
// page's script sends the header, its forms the field.
const (
	csrfHeader = "X-CSRF-Token"
	csrfField  = "csrf_token"
)

// newToken returns the handler's token: a secret that a page of another
// origin cannot read, so it cannot send it. Random, or derived from key
// (WithCSRFKey) so that replicas agree.
func newToken(key []byte) string {
	if key != nil {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte("shedlockhttp CSRF token"))
		return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// checkToken reports whether r carries the handler's token. The form has
// been parsed.
func (h *handler) checkToken(r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(h.csrf)) == 1
}
