package browser

import (
	"context"
	"crypto/rand"
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
	"github.com/robfig/cron/v3"
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
// that keep it off the network, which this machine does not have. Its tabs
// (tab) share it.
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
		// Tabs in the background go on updating their pages.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// tab opens a tab of the browser in a browser context of its own (its own
// cookies, as another user's browser would have), closed when t ends.
func tab(t *testing.T, browser context.Context) context.Context {
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx), "open a tab")
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

// click clicks the button of action kind in the row of lock name, once the
// row is shown: the row is found and the button clicked in one step of the
// page's script, between two of its live updates, since a key-value store
// shows a lock that is not paused only while it is held, and the row can go
// between two steps.
func click(t *testing.T, ctx context.Context, name, kind string) {
	t.Helper()
	sel := fmt.Sprintf(`tr[data-lock=%q] form[data-kind=%q] button`, name, kind)
	js := fmt.Sprintf(`(() => { const b = document.querySelector(%q); if (!b) { return false; } b.click(); return true; })()`, sel)
	deadline := time.Now().Add(30 * time.Second)
	for {
		clicked, err := eval[bool](ctx, js)
		if err == nil && clicked {
			return
		}
		if time.Now().After(deadline) {
			page, _ := eval[string](ctx, `document.body ? document.body.innerText : ''`)
			t.Fatalf("no button %s in 30 s (%v); the page:\n%s", sel, err, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flash is the page's message about the last action.
func flash(ctx context.Context) string {
	s, _ := eval[string](ctx, `document.getElementById('flash').textContent`)
	return s
}

// waitFlash waits for the page's message about the last action to contain
// want: it comes with the action's answer, which the page's next update of
// its locks may precede.
func waitFlash(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the message %q", want), func() bool { return strings.Contains(flash(ctx), want) })
}

func secret() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dashboard is the process that mounts the dashboard: it runs jobs and
// leads a group itself, as a service would, and serves the page.
type dashboard struct {
	url    string // the page
	store  store
	cookie string        // the operator's session
	report shedlock.Lock // report's lock, held by the dashboard until the test's run-now
}

// nightlyJob is a job of the dashboard's process on a schedule: the page
// shows its next fire time.
var nightlyJob = shedlock.LockConfig{Name: "nightly", LockAtMostFor: time.Minute}

func startDashboard(t *testing.T, s podStore) dashboard {
	ctx := context.Background()
	st := openStore(t, s, "dashboard")
	// report's lock, held: its row is on the page before its first run, on
	// every store (a key-value store shows a lock only while it is held, or
	// paused or asked to run), and a run-now waits for it.
	report, err := st.TryLock(ctx, shedlock.LockConfig{Name: reportJob.Name, LockAtMostFor: 2 * time.Minute})
	require.NoError(t, err)

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
	c := cron.New(cron.WithSeconds(), cron.WithLocation(time.UTC))
	_, err = ex.Schedule(c, "0 0 3 * * *", nightlyJob, func(context.Context) error { return nil })
	require.NoError(t, err)
	c.Start()
	ex.Start()
	leader, err := shedlock.NewLeader(st, "leader-group", 3*time.Second, shedlock.WithLeaderListener(rec))
	require.NoError(t, err)
	leader.Start()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		<-c.Stop().Done()
		_ = leader.Stop(sctx)
		_ = ex.Stop(sctx)
	})

	cookie := secret()
	h := shedlockhttp.NewHandler(st, shedlockhttp.WithRecorder(rec), shedlockhttp.WithJobs(ex),
		shedlockhttp.WithRefresh(300*time.Millisecond),
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
	return dashboard{url: srv.URL + "/ops/locks/", store: st, cookie: cookie, report: report}
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
	return control(t, d.store, name)
}

// aliveSince waits until every pod of live has begun two attempts at tick
// (runs, or skips: held elsewhere, paused) after since: proof that time
// passed for them and that they kept trying.
func aliveSince(t *testing.T, j *journal, live []*pod, since time.Time) {
	t.Helper()
	waitFor(t, "every pod trying tick again", func() bool {
		attempts := j.attemptsSince(t, tickJob.Name, since)
		for _, p := range live {
			if attempts[p.name] < 2 {
				return false
			}
		}
		return true
	})
}

// screenshotPath is where the test saves the page's picture on store kind:
// $SHEDLOCK_DASHBOARD_PNG for SQLite's (docs/dashboard.png is made so), else
// a temporary directory.
func screenshotPath(t *testing.T, kind string) string {
	if p := os.Getenv("SHEDLOCK_DASHBOARD_PNG"); p != "" && kind == sqliteStore {
		return p
	}
	return filepath.Join(t.TempDir(), "dashboard.png")
}

// hasText reports whether the page's text contains s.
func hasText(ctx context.Context, s string) bool {
	text, err := eval[string](ctx, `document.body ? document.body.innerText : ''`)
	return err == nil && strings.Contains(text, s)
}
