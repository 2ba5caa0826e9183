package shedlockhttp_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// quiet drops the handler's log: the tests look at what it serves.
var quiet = shedlockhttp.WithLogger(slog.New(slog.DiscardHandler))

// allowAll is an authorize hook that allows every action.
func allowAll(*http.Request, shedlockhttp.Action) error { return nil }

// get fetches path from srv and returns the status and body.
func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

var tokenRE = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// token reads the CSRF token from the page at base.
func token(t *testing.T, srv *httptest.Server, base string) string {
	t.Helper()
	_, body := get(t, srv, base)
	m := tokenRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

// post sends an action as the page's script does: same origin, the token in
// the header, JSON back. edit changes the request before it is sent.
func post(t *testing.T, srv *httptest.Server, path string, form url.Values, edit func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if edit != nil {
		edit(req)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		return res.StatusCode, string(b)
	}
	return res.StatusCode, body.Message
}

func withToken(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-CSRF-Token", tok) }
}

func newServer(t *testing.T, admin shedlock.Admin, opts ...shedlockhttp.Option) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/ops/locks/", http.StripPrefix("/ops/locks", shedlockhttp.NewHandler(admin, opts...)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The page lists every lock with its holder, time left, last success, pause
// and run-nows; it carries the security headers.
func TestPageShowsLocks(t *testing.T) {
	st := newControlStore()
	st.hold("outboxPollJob", "pod-a#1.3", time.Minute)
	st.hold("cancelOrders", "pod-b#2.9", -time.Second)
	st.fires["cancelOrders"] = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	_ = st.Pause(t.Context(), "cancelOrders", time.Time{})
	_, _ = st.RunNow(t.Context(), "outboxPollJob")
	srv := newServer(t, st)

	res, body := get(t, srv, "/ops/locks/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{
		`<tr data-lock="outboxPollJob" class="held">`, "pod-a#1.3", `<span class="badge held">held</span>`,
		`<tr data-lock="cancelOrders" class="paused">`, "until resumed", "2030-01-02 03:04:05.000",
		`<span class="run-requests"><span class="badge pending">1 run-now</span></span>`, "<b>2</b> locks",
		`<span class="readonly">read-only</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, `action="api/pause"`) {
		t.Error("a read-only page offers actions")
	}
	h := res.Header
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") ||
		!strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy: %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", h)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(body) {
		t.Error("inline script in the page")
	}
	for _, asset := range []string{"static/app.js", "static/app.css"} {
		res, b := get(t, srv, "/ops/locks/"+asset)
		if res.StatusCode != http.StatusOK || len(b) < 100 {
			t.Errorf("%s: %d, %d bytes", asset, res.StatusCode, len(b))
		}
		if strings.Contains(b, "http://") || strings.Contains(b, "https://") {
			t.Errorf("%s loads from elsewhere", asset)
		}
	}
}

// Names and holders are the store's, which anyone with access to it writes:
// they are escaped.
func TestPageEscapes(t *testing.T) {
	st := newControlStore()
	st.hold(`<script>alert(1)</script>`, `"><img src=x onerror=alert(2)>`, time.Minute)
	srv := newServer(t, st, shedlockhttp.WithAuthorize(allowAll))
	_, body := get(t, srv, "/ops/locks/")
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Fatalf("unescaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the name is not shown escaped")
	}
}

// api/locks pages and filters; the counts are the whole table's.
func TestAPILocks(t *testing.T) {
	st := newControlStore()
	for i := range 30 {
		st.hold(strings.Repeat("x", i%3+1)+"-job-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "pod", time.Duration(i%2)*time.Minute)
	}
	srv := newServer(t, st, shedlockhttp.WithPageSize(10), quiet)
	var page struct {
		Total, Held, Matching, Offset int
		Locks                         []struct {
			Name       string `json:"name"`
			Held       bool   `json:"held"`
			TimeLeftMS int64  `json:"time_left_ms"`
		}
	}
	_, body := get(t, srv, "/ops/locks/api/locks?offset=5")
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err, body)
	}
	if page.Total != 30 || page.Held != 15 || page.Matching != 30 || page.Offset != 5 || len(page.Locks) != 10 {
		t.Errorf("page: %+v", page)
	}
	_, body = get(t, srv, "/ops/locks/api/locks?q=XXX-&state=held&limit=100")
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Locks {
		if !strings.HasPrefix(l.Name, "xxx-") || !l.Held || l.TimeLeftMS <= 0 {
			t.Errorf("filtered: %+v", l)
		}
	}
	if page.Matching != 5 || len(page.Locks) != 5 {
		t.Errorf("matching %d, %d shown", page.Matching, len(page.Locks))
	}
	st.failed = errors.New("connection refused")
	res, body := get(t, srv, "/ops/locks/api/locks")
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, "connection refused") {
		t.Errorf("a store down: %d %s", res.StatusCode, body)
	}
	res, body = get(t, srv, "/ops/locks/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "The store: connection refused") {
		t.Errorf("a store down, the page: %d", res.StatusCode)
	}
}

// The handler works under any prefix, with http.StripPrefix or without, and
// answers paths it does not know with 404.
func TestMountAnywhere(t *testing.T) {
	st := newControlStore()
	st.hold("job", "pod", time.Minute)
	h := shedlockhttp.NewHandler(st)
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/api/admin/locks/", h) // a prefix with api/ in it, unstripped
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/", "/api/admin/locks/", "/api/admin/locks/api/locks", "/live", "/static/app.js"} {
		if res, body := get(t, srv, path); res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
	}
	for _, path := range []string{"/nope", "/static/page.html", "/static/app", "/api/admin/locks/api/lock"} {
		if res, _ := get(t, srv, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.StatusCode)
		}
	}
	if res, _ := get(t, srv, "/api/pause"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Errorf("GET of an action: %d", res.StatusCode)
	}
}

// A bad option is an error wrapping shedlock.ErrInvalidOption, raised by
// NewHandler.
func TestBadOptions(t *testing.T) {
	for name, opt := range map[string]shedlockhttp.Option{
		"nil":       nil,
		"authorize": shedlockhttp.WithAuthorize(nil),
		"refresh":   shedlockhttp.WithRefresh(time.Millisecond),
		"page":      shedlockhttp.WithPageSize(0),
		"leaders":   shedlockhttp.WithLeaders(""),
		"recorder":  shedlockhttp.WithRecorder(nil),
		"jobs":      shedlockhttp.WithJobs(nil),
		"csrf key":  shedlockhttp.WithCSRFKey([]byte("short")),
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, shedlock.ErrInvalidOption) {
					t.Errorf("%s: panicked with %v", name, err)
				}
			}()
			shedlockhttp.NewHandler(newAdminStore(), opt)
		}()
	}
}
