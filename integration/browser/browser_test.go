package browser

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// chromium finds the browser: $SHEDLOCK_CHROMIUM, else Debian's chromium
// (scripts/servers installs it for make check). Without one the test fails,
// unless SHEDLOCK_SKIP_STORES names chromium: then it is skipped, and
// scripts/test counts the skip as allowed.
func chromium(t *testing.T) string {
	if p := os.Getenv("SHEDLOCK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no chromium for tests: install Debian's package chromium (as root, SHEDLOCK_BROWSER=1 scripts/servers does), or set SHEDLOCK_CHROMIUM"
	if slices.Contains(strings.Split(os.Getenv("SHEDLOCK_SKIP_STORES"), ","), "chromium") {
		t.Skip("SKIPPING: " + why)
	}
	t.Fatal(why)
	return ""
}

// browser starts headless Chromium with a profile of its own and the flags
// that keep it off the network, which this machine does not have.
func browser(t *testing.T) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// eval evaluates js in the page, awaiting a promise.
func eval[T any](ctx context.Context, js string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// row is one lock as the page shows it.
type row struct {
	Name    string `json:"name"`
	Held    bool   `json:"held"`
	Holder  string `json:"holder"`
	Paused  bool   `json:"paused"`
	Pending string `json:"pending"`
	Actions int    `json:"actions"`
}

const rowsJS = `Array.from(document.querySelectorAll('tr[data-lock]')).map(tr => ({
	name: tr.dataset.lock,
	held: tr.querySelector('.badge.held') !== null,
	holder: (tr.querySelector('.holder') || {}).textContent || '',
	paused: tr.querySelector('.pause-state .badge.paused') !== null,
	pending: ((tr.querySelector('.run-requests') || {}).textContent || '').trim(),
	actions: tr.querySelectorAll('form.act').length,
}))`

// waitRows polls the page's lock rows until cond holds, for up to 30 s.
func waitRows(t *testing.T, ctx context.Context, what string, cond func(map[string]row) bool) map[string]row {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, err := eval[[]row](ctx, rowsJS)
		if err == nil {
			rows := map[string]row{}
			for _, r := range last {
				rows[r.Name] = r
			}
			if cond(rows) {
				return rows
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show %s in 30 s (last: %+v, %v)", what, last, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the button of action kind in the row of lock name.
func click(t *testing.T, ctx context.Context, name, kind string) {
	t.Helper()
	sel := fmt.Sprintf(`tr[data-lock=%q] form[data-kind=%q] button`, name, kind)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(cctx, chromedp.Click(chromedp.CSS(sel))), "click %s", sel)
}

// flash is the page's message about the last action.
func flash(ctx context.Context) string {
	s, _ := eval[string](ctx, `document.getElementById('flash').textContent`)
	return s
}

func secret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dashboard is the process that mounts the dashboard: it runs a job and
// leads a group itself, as a service would, and serves the page.
type dashboard struct {
	url    string // the page
	store  store
	cookie string // the operator's session
}

func startDashboard(t *testing.T, dsn string) dashboard {
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	p, err := shedlock.NewSQLiteProvider(db, shedlock.WithLockedBy("dashboard"))
	require.NoError(t, err)
	require.NoError(t, p.EnsureTable(ctx))
	st, err := controlled(ctx, db, p)
	require.NoError(t, err)
	// report's row, so that the page offers run-now for it before its first run.
	l, err := st.TryLock(ctx, reportJob)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))

	rec := shedlockhttp.NewRecorder()
	ex := shedlock.NewExecutor(st, shedlock.WithListener(rec))
	require.NoError(t, ex.FixedDelay(shedlock.LockConfig{Name: "digest", LockAtMostFor: 5 * time.Second}, 300*time.Millisecond,
		func(ctx context.Context) error {
			select {
			case <-ctx.Done():
			case <-time.After(80 * time.Millisecond):
			}
			return nil
		}))
	ex.Start()
	leader, err := shedlock.NewLeader(st, "leader-group", 3*time.Second, shedlock.WithLeaderListener(rec))
	require.NoError(t, err)
	leader.Start()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = leader.Stop(sctx)
		_ = ex.Stop(sctx)
	})

	cookie := secret()
	h := shedlockhttp.NewHandler(st, shedlockhttp.WithRecorder(rec), shedlockhttp.WithRefresh(300*time.Millisecond),
		shedlockhttp.WithLeaders("leader-group"), shedlockhttp.WithTitle("orders service"),
		shedlockhttp.WithAuthorize(func(r *http.Request, _ shedlockhttp.Action) error {
			if c, err := r.Cookie("op"); err == nil && c.Value == cookie {
				return nil
			}
			return errors.New("not an operator")
		}))
	mux := http.NewServeMux()
	mux.Handle("/ops/locks/", http.StripPrefix("/ops/locks", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return dashboard{url: srv.URL + "/ops/locks/", store: st, cookie: cookie}
}

// login gives the browser the operator's session cookie for d.
func (d dashboard) login(ctx context.Context) error {
	httpOnly := true
	_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "op", Value: d.cookie, URL: d.url, HTTPOnly: &httpOnly})
	return err
}

func (d dashboard) logout(ctx context.Context) error {
	_, err := chromedp.Call(ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: "op", URL: d.url})
	return err
}

// control reads a job's pause and run-nows from the store.
func (d dashboard) control(t *testing.T, name string) shedlock.Control {
	t.Helper()
	l, err := d.store.Inspect(context.Background(), name)
	require.NoError(t, err)
	return l.Control
}

// aliveSince waits until every pod of live has run its own job again after
// since: proof that time passed for them and that they kept checking.
func aliveSince(t *testing.T, runsDir string, live []*pod, since time.Time) {
	t.Helper()
	for _, p := range live {
		waitFor(t, p.name+" running again", func() bool { return runsSince(t, runsDir, p.name, since)[p.name] > 0 })
	}
}

// screenshotPath is where the test saves the page's picture:
// $SHEDLOCK_DASHBOARD_PNG (docs/dashboard.png is made so), else a temporary
// directory.
func screenshotPath(t *testing.T) string {
	if p := os.Getenv("SHEDLOCK_DASHBOARD_PNG"); p != "" {
		return p
	}
	return filepath.Join(t.TempDir(), "dashboard.png")
}

// hasText reports whether the page's text contains s.
func hasText(ctx context.Context, s string) bool {
	text, err := eval[string](ctx, `document.body ? document.body.innerText : ''`)
	return err == nil && strings.Contains(text, s)
}
