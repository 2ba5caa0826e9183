package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// served is a serve command running in-process.
type served struct {
	url  string
	stop func() result
}

var servingRE = regexp.MustCompile(`on (http://[^/]+/): `)

// startServe runs serve with args on a free port until the test stops it.
func startServe(t *testing.T, args ...string) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append(args, "-addr", "127.0.0.1:0"), strings.NewReader(""), &out, &errOut)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !servingRE.MatchString(out.String()) {
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve ended with %d: %s", code, errOut.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "serve did not start: %s", errOut.String())
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop := func() result {
		if !stopped {
			cancel()
			stopped = true
			return result{<-done, out.String(), errOut.String()}
		}
		return result{}
	}
	t.Cleanup(func() { stop() })
	return served{url: servingRE.FindStringSubmatch(out.String())[1], stop: stop}
}

// do sends one request; edit adds headers. It returns the status and body.
func do(t *testing.T, method, u string, form url.Values, edit func(*http.Request)) (int, string, *http.Response) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	if edit != nil {
		edit(req)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b), res
}

var csrfRE = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// serve without a token: the dashboard shows the store's locks and refuses
// every action; interrupted, it ends with status 0.
func TestServeReadOnly(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		p := tbl.pod(t)
		take(t, p, shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: time.Minute})
		srv := startServe(t, tbl.args("serve")...)
		code, page, res := do(t, http.MethodGet, srv.url, nil, nil)
		require.Equal(t, http.StatusOK, code, page)
		assert.Contains(t, page, `<tr data-lock="outboxPollJob" class="held">`)
		assert.Contains(t, page, p.LockedBy())
		assert.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'self'")
		tok := csrfRE.FindStringSubmatch(page)[1]
		code, msg, _ := do(t, http.MethodPost, srv.url+"api/run", url.Values{"name": {"outboxPollJob"}},
			func(r *http.Request) { r.Header.Set("X-CSRF-Token", tok) })
		assert.Equal(t, http.StatusForbidden, code)
		assert.Contains(t, msg, "read-only")
		assert.Zero(t, steered(t, tbl, "outboxPollJob").RunRequests)
		r := srv.stop()
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "read-only")
	})
}

// serve with a token: an action needs it, as a bearer header or through the
// login form's session cookie; a wrong token logs nobody in, a cross-site
// POST is refused even with the session, and logging out ends it.
func TestServeToken(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		const token = "correct horse battery staple"
		take(t, tbl.pod(t), shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: time.Minute})
		srv := startServe(t, tbl.args("serve", "-token", token)...)
		_, page, _ := do(t, http.MethodGet, srv.url, nil, nil)
		assert.Contains(t, page, `href="login"`)
		assert.NotContains(t, page, `action="api/run"`, "no actions offered before logging in")
		tok := csrfRE.FindStringSubmatch(page)[1]
		run := func(edit func(*http.Request)) (int, string) {
			code, msg, _ := do(t, http.MethodPost, srv.url+"api/run", url.Values{"name": {"outboxPollJob"}},
				func(r *http.Request) {
					r.Header.Set("X-CSRF-Token", tok)
					if edit != nil {
						edit(r)
					}
				})
			return code, msg
		}
		code, msg := run(nil)
		assert.Equal(t, http.StatusForbidden, code, msg)
		assert.Contains(t, msg, "log in first")
		code, msg = run(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") })
		assert.Equal(t, http.StatusForbidden, code, msg)
		assert.Zero(t, steered(t, tbl, "outboxPollJob").RunRequests)
		code, msg = run(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) })
		require.Equal(t, http.StatusOK, code, msg)
		assert.EqualValues(t, 1, steered(t, tbl, "outboxPollJob").RunRequests)

		code, _, res := do(t, http.MethodPost, srv.url+"login", url.Values{"token": {"guess"}}, nil)
		assert.Equal(t, http.StatusForbidden, code)
		assert.Empty(t, res.Cookies())
		code, _, res = do(t, http.MethodPost, srv.url+"login", url.Values{"token": {token}}, nil)
		require.Equal(t, http.StatusSeeOther, code)
		require.Len(t, res.Cookies(), 1)
		session := res.Cookies()[0]
		assert.True(t, session.HttpOnly)
		assert.Equal(t, http.SameSiteStrictMode, session.SameSite)
		assert.NotContains(t, session.Value, token)
		withSession := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value}) }
		_, page, _ = do(t, http.MethodGet, srv.url, nil, withSession)
		assert.Contains(t, page, `action="api/run"`, "actions offered once logged in")
		code, msg = run(withSession)
		require.Equal(t, http.StatusOK, code, msg)
		code, msg = run(func(r *http.Request) { withSession(r); r.Header.Set("Sec-Fetch-Site", "cross-site") })
		assert.Equal(t, http.StatusForbidden, code, msg)
		assert.EqualValues(t, 2, steered(t, tbl, "outboxPollJob").RunRequests)

		code, _, res = do(t, http.MethodPost, srv.url+"logout", url.Values{}, withSession)
		assert.Equal(t, http.StatusSeeOther, code)
		require.Len(t, res.Cookies(), 1)
		assert.Equal(t, -1, res.Cookies()[0].MaxAge)
		assert.Equal(t, 0, srv.stop().code)
	})
}

// A token too short to be a secret is bad usage.
func TestServeShortToken(t *testing.T) {
	tbl := sqliteTable(t)
	r := runCLI(t, "", tbl.args("serve", "-token", "short")...)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "-token: at least 16 characters")
}
