package shedlockhttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// Without WithAuthorize every action is refused, with the token and from
// the page's own origin, and nothing changes.
func TestReadOnlyByDefault(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod", time.Minute)
	srv := newServer(t, st, quiet)
	tok := token(t, srv, "/ops/locks/")
	for _, kind := range []string{"pause", "resume", "run", "unlock"} {
		code, msg := post(t, srv, "/ops/locks/api/"+kind, url.Values{"name": {"job"}}, withToken(tok))
		if code != http.StatusForbidden || !strings.Contains(msg, "read-only") {
			t.Errorf("%s: %d %s", kind, code, msg)
		}
	}
	if c := st.control("job"); c != (shedlock.Control{}) {
		t.Errorf("changed: %+v", c)
	}
}

// The actions, allowed: pause for a while and until resumed, resume, run-now
// (each call one run), and unlock of the acquisition shown.
func TestActions(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod-a#1.1", time.Minute)
	var asked []shedlockhttp.Action
	srv := newServer(t, st, quiet, shedlockhttp.WithAuthorize(func(_ *http.Request, a shedlockhttp.Action) error {
		asked = append(asked, a)
		return nil
	}))
	tok := token(t, srv, "/ops/locks/")
	asked = nil
	before := time.Now()
	code, msg := post(t, srv, "/ops/locks/api/pause", url.Values{"name": {"job"}, "for": {"1h"}}, withToken(tok))
	if code != http.StatusOK || !strings.Contains(msg, `paused "job" until`) {
		t.Fatalf("pause: %d %s", code, msg)
	}
	c := st.control("job")
	if !c.Paused || c.PausedUntil.Before(before.Add(time.Hour)) || c.PausedUntil.After(time.Now().Add(time.Hour)) {
		t.Errorf("paused for 1h: %+v", c)
	}
	if len(asked) != 1 || asked[0].Kind != shedlockhttp.ActionPause || asked[0].Name != "job" || !asked[0].Until.Equal(c.PausedUntil) {
		t.Errorf("the hook was asked %+v", asked)
	}
	code, msg = post(t, srv, "/ops/locks/api/resume", url.Values{"name": {"job"}}, withToken(tok))
	if code != http.StatusOK || st.control("job").Paused {
		t.Errorf("resume: %d %s %+v", code, msg, st.control("job"))
	}
	post(t, srv, "/ops/locks/api/pause", url.Values{"name": {"job"}}, withToken(tok))
	if c := st.control("job"); !c.Paused || !c.PausedUntil.IsZero() {
		t.Errorf("paused until resumed: %+v", c)
	}
	for i := int64(1); i <= 2; i++ {
		code, msg = post(t, srv, "/ops/locks/api/run", url.Values{"name": {"job"}}, withToken(tok))
		if code != http.StatusOK || st.control("job").RunRequests != i {
			t.Errorf("run %d: %d %s %+v", i, code, msg, st.control("job"))
		}
	}

	info, _ := st.Inspect(t.Context(), "job")
	seen := url.Values{"name": {"job"}, "locked_by": {info.LockedBy}, "locked_at": {info.LockedAt.Format(time.RFC3339Nano)}}
	st.hold("job", "pod-b#2.1", time.Minute) // taken since the page showed it
	code, msg = post(t, srv, "/ops/locks/api/unlock", seen, withToken(tok))
	if code != http.StatusConflict || !strings.Contains(msg, "pod-b#2.1") {
		t.Errorf("unlock of an acquisition gone: %d %s", code, msg)
	}
	if now, _ := st.Inspect(t.Context(), "job"); !now.Held || now.LockedBy != "pod-b#2.1" {
		t.Errorf("a newer acquisition freed: %+v", now)
	}
	info, _ = st.Inspect(t.Context(), "job")
	seen.Set("locked_by", info.LockedBy)
	seen.Set("locked_at", info.LockedAt.Format(time.RFC3339Nano))
	code, msg = post(t, srv, "/ops/locks/api/unlock", seen, withToken(tok))
	if now, _ := st.Inspect(t.Context(), "job"); code != http.StatusOK || now.Held || !strings.Contains(msg, "taken from pod-b#2.1") {
		t.Errorf("unlock: %d %s %+v", code, msg, now)
	}

	for _, bad := range []url.Values{{}, {"name": {"job"}, "for": {"-1h"}}, {"name": {"job"}, "for": {"10000h"}},
		{"name": {"job"}, "for": {"1h"}, "until": {"2099-01-01T00:00:00Z"}}} {
		if code, msg := post(t, srv, "/ops/locks/api/pause", bad, withToken(tok)); code != http.StatusBadRequest {
			t.Errorf("pause %v: %d %s", bad, code, msg)
		}
	}
}

// The hook decides per request and per action; its reason is shown. The
// page offers only the actions the hook allows the request.
func TestAuthorizeHook(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod", time.Minute)
	srv := newServer(t, st, quiet, shedlockhttp.WithLoginURL("login"),
		shedlockhttp.WithAuthorize(func(r *http.Request, a shedlockhttp.Action) error {
			if r.Header.Get("Authorization") != "Bearer op" {
				return errors.New("log in first")
			}
			if a.Kind == shedlockhttp.ActionUnlock {
				return errors.New("operators do not unlock")
			}
			return nil
		}))
	_, body := get(t, srv, "/ops/locks/")
	if strings.Contains(body, `action="api/run"`) || !strings.Contains(body, `href="login"`) {
		t.Error("a page without credentials offers actions, or no login link")
	}
	tok := token(t, srv, "/ops/locks/")
	code, msg := post(t, srv, "/ops/locks/api/run", url.Values{"name": {"job"}}, withToken(tok))
	if code != http.StatusForbidden || msg != "refused: log in first" || st.control("job").RunRequests != 0 {
		t.Errorf("unauthorized run: %d %q", code, msg)
	}
	bearer := func(r *http.Request) { withToken(tok)(r); r.Header.Set("Authorization", "Bearer op") }
	if code, msg := post(t, srv, "/ops/locks/api/unlock", url.Values{"name": {"job"}, "locked_at": {time.Now().Format(time.RFC3339)}},
		bearer); code != http.StatusForbidden || !strings.Contains(msg, "operators do not unlock") {
		t.Errorf("unlock: %d %s", code, msg)
	}
	if code, msg := post(t, srv, "/ops/locks/api/run", url.Values{"name": {"job"}}, bearer); code != http.StatusOK {
		t.Errorf("authorized run: %d %s", code, msg)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ops/locks/", nil)
	req.Header.Set("Authorization", "Bearer op")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if page := string(b); !strings.Contains(page, `action="api/run"`) || strings.Contains(page, `action="api/unlock"`) {
		t.Error("an operator's page: run offered, unlock not")
	}
}

// A cross-site POST is refused before anything is read, even with the token
// and an authorize hook that allows all; so is one without the token.
func TestCrossSiteRefused(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod", time.Minute)
	srv := newServer(t, st, quiet, shedlockhttp.WithAuthorize(allowAll))
	tok := token(t, srv, "/ops/locks/")
	for name, edit := range map[string]func(*http.Request){
		"Sec-Fetch-Site cross-site": func(r *http.Request) { withToken(tok)(r); r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"Sec-Fetch-Site same-site":  func(r *http.Request) { withToken(tok)(r); r.Header.Set("Sec-Fetch-Site", "same-site") },
		"Origin elsewhere": func(r *http.Request) {
			withToken(tok)(r)
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "https://evil.example")
		},
		"no token":    nil,
		"wrong token": withToken(tok + "x"),
	} {
		code, msg := post(t, srv, "/ops/locks/api/pause", url.Values{"name": {"job"}}, edit)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, code, msg)
		}
	}
	// A plain HTML form from elsewhere, as a browser sends it: the token in
	// the form, which the other site cannot read.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ops/locks/api/run",
		strings.NewReader(url.Values{"name": {"job"}, "csrf_token": {"guess"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a form from elsewhere: %d", res.StatusCode)
	}
	if c := st.control("job"); c != (shedlock.Control{}) {
		t.Errorf("changed: %+v", c)
	}
	// The same form from the page itself (the token in the field): done, and
	// the browser is sent back to the page.
	form := url.Values{"name": {"job"}, "csrf_token": {tok}}
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/ops/locks/api/run", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "../" || st.control("job").RunRequests != 1 {
		t.Errorf("the page's own form: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// The token is the handler's own: another handler refuses it, unless both
// were given the same WithCSRFKey, as replicas behind one address are.
func TestCSRFKeyShared(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod", time.Minute)
	key := []byte("0123456789abcdef-shared")
	a := newServer(t, st, quiet, shedlockhttp.WithAuthorize(allowAll))
	b := newServer(t, st, quiet, shedlockhttp.WithAuthorize(allowAll))
	if code, msg := post(t, b, "/ops/locks/api/run", url.Values{"name": {"job"}}, withToken(token(t, a, "/ops/locks/"))); code != http.StatusForbidden {
		t.Errorf("another handler's token: %d %s", code, msg)
	}
	a = newServer(t, st, quiet, shedlockhttp.WithAuthorize(allowAll), shedlockhttp.WithCSRFKey(key))
	b = newServer(t, st, quiet, shedlockhttp.WithAuthorize(allowAll), shedlockhttp.WithCSRFKey(key))
	if code, msg := post(t, b, "/ops/locks/api/run", url.Values{"name": {"job"}}, withToken(token(t, a, "/ops/locks/"))); code != http.StatusOK {
		t.Errorf("a replica's token, one key: %d %s", code, msg)
	}
	if st.control("job").RunRequests != 1 {
		t.Errorf("run requests: %+v", st.control("job"))
	}
}

// On a store without shedlock.Controller, pause and run-now are not offered
// and are refused with 501; unlock still works.
func TestStoreWithoutController(t *testing.T) {
	st := newAdminStore()
	st.hold("job", "pod", time.Minute)
	mux := http.NewServeMux()
	mux.Handle("/", shedlockhttp.NewHandler(st, quiet, shedlockhttp.WithAuthorize(allowAll)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, body := get(t, srv, "/")
	if strings.Contains(body, `action="api/pause"`) || !strings.Contains(body, `action="api/unlock"`) {
		t.Error("offers pause, or no unlock")
	}
	tok := token(t, srv, "/")
	if code, msg := post(t, srv, "/api/pause", url.Values{"name": {"job"}}, withToken(tok)); code != http.StatusNotImplemented {
		t.Errorf("pause: %d %s", code, msg)
	}
}
