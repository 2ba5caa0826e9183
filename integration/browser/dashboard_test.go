package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dashboard in a real browser, against five pod processes on each
// store (one Chromium, a tab for each store, the stores side by side): the
// page shows every pod's locks and follows them without a reload (a pod
// killed: its lock shown free) and this process's jobs with their next fire
// times; a pause clicked on the page stops the job on every pod, and resume
// restarts it; run-now runs the job once; an action without the operator's
// session, and a POST from another site, are refused and change nothing. It
// ends with a screenshot.
func TestBrowserDashboard(t *testing.T) {
	chrome := browser(t)
	eachStore(t, func(t *testing.T, s podStore) {
		began := time.Now()
		d := startDashboard(t, s)
		ps := newPodsOf(t, s)
		pods := ps.start(t, 5)
		ctx := tab(t, chrome)
		require.NoError(t, d.login(ctx))
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(d.url), chromedp.WaitVisible(chromedp.CSS(`#live`))))
		// A marker that a reload would lose, and a record of what the
		// Content-Security-Policy refuses: nothing the page does itself.
		_, err := eval[string](ctx, `window.__firstLoad = 'still'; window.__refused = [];
		document.addEventListener('securitypolicyviolation', e => window.__refused.push(e.violatedDirective + ' ' + e.blockedURI));
		'set'`)
		require.NoError(t, err)

		seesPods(t, ctx, pods)
		seesJobs(t, ctx)
		live := pods[:4]
		pauseAndResume(t, ctx, d, ps.journal, live)
		runNowOnce(t, ctx, d, ps.journal, live)
		marker, err := eval[string](ctx, `window.__firstLoad`)
		require.NoError(t, err)
		assert.Equal(t, "still", marker, "every change above came without a reload")
		refused, err := eval[[]string](ctx, `window.__refused`)
		require.NoError(t, err)
		assert.Empty(t, refused, "the page's own updates broke its Content-Security-Policy")

		unauthorized(t, ctx, d, ps.journal, live)
		crossSite(t, ctx, d, ps.journal, live)
		screenshot(t, ctx, d, s.Kind)
		t.Logf("%s: %v", s.Kind, time.Since(began).Round(time.Millisecond))
	})
}

// seesPods: each pod's own lock held by that pod, tick held in turn by
// several, and a pod killed shown by its lock going free.
func seesPods(t *testing.T, ctx context.Context, pods []*pod) {
	waitRows(t, ctx, "each pod's lock held by it", func(rows map[string]row) bool {
		for _, p := range pods {
			if r := rows[p.name]; !r.Held || holderPod(r.Holder) != p.name {
				return false
			}
		}
		return true
	})
	holders := map[string]bool{}
	waitRows(t, ctx, "tick taken by several pods", func(rows map[string]row) bool {
		if h := holderPod(rows["tick"].Holder); h != "" {
			holders[h] = true
		}
		return len(holders) >= 3
	})
	pods[4].kill()
	waitRows(t, ctx, "the killed pod's lock free", func(rows map[string]row) bool { return !rows[pods[4].name].Held })
	updates, err := eval[string](ctx, `document.body.dataset.updates`)
	require.NoError(t, err)
	t.Logf("the page followed the pods with %s updates, tick held in turn by %d pods", updates, len(holders))
}

// holderPod is the pod of a holder as the page shows it: the name the pod
// gave its provider, before the provider's suffix ("pod-1#3f9c2b1e.7", and
// shedlockredis's "pod-1:3f9c2b1e-7").
func holderPod(holder string) string {
	if i := strings.IndexAny(holder, "#:"); i >= 0 {
		return holder[:i]
	}
	return holder
}

// seesJobs: the jobs of the dashboard's own process (WithJobs on its
// executor): digest, run here, and nightly, with its next fire time.
func seesJobs(t *testing.T, ctx context.Context) {
	type job struct {
		Name   string `json:"name"`
		Next   string `json:"next"`
		Result string `json:"result"`
	}
	const jobsJS = `Array.from(document.querySelectorAll('tr[data-job]')).map(tr => ({
	name: tr.dataset.job,
	next: (tr.querySelector('time') || {title: ''}).title,
	result: (tr.querySelector('.result') || {}).textContent || '',
}))`
	nightly := nextAt(3, 0)
	waitFor(t, "the process's jobs", func() bool {
		jobs, err := eval[[]job](ctx, jobsJS)
		if err != nil {
			return false
		}
		seen := map[string]job{}
		for _, j := range jobs {
			seen[j.Name] = j
		}
		return len(jobs) == 2 && seen["digest"].Result == "ok" &&
			strings.HasPrefix(seen[nightlyJob.Name].Next, nightly.Format("2006-01-02 15:04:05"))
	})
}

// nextAt is the next time of day h:m, UTC.
func nextAt(h, m int) time.Time {
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	return next
}

// pauseAndResume: Pause on tick's row, then every pod's attempts at tick are
// refused as paused and none runs it; Resume, and tick runs again.
func pauseAndResume(t *testing.T, ctx context.Context, d dashboard, j *journal, live []*pod) {
	clicked := time.Now()
	click(t, ctx, "tick", "pause")
	waitRows(t, ctx, "tick paused", func(rows map[string]row) bool { return rows["tick"].Paused })
	waitFlash(t, ctx, `paused "tick" until resumed`)
	c := d.control(t, "tick")
	require.True(t, c.Paused, "the store keeps the pause")
	assert.True(t, c.PausedUntil.IsZero())
	refusedEverywhere(t, j, live, tickJob.Name, clicked, 3)

	click(t, ctx, "tick", "resume")
	waitRows(t, ctx, "tick resumed", func(rows map[string]row) bool { return !rows["tick"].Paused })
	resumed := time.Now()
	waitFor(t, "tick running again", func() bool { return total(j.runsSince(t, "tick", resumed)) >= 3 })
	assert.False(t, d.control(t, "tick").Paused)
}

// runNowOnce: Run now on report's row, while the dashboard holds report's
// lock: every pod tries report and finds it held; once the lock is
// released, one pod runs it, once, and the request is used up.
func runNowOnce(t *testing.T, ctx context.Context, d dashboard, j *journal, live []*pod) {
	start := time.Time{}
	require.Zero(t, total(j.runsSince(t, "report", start)), "report runs only when asked")
	clicked := time.Now()
	click(t, ctx, "report", "run")
	waitRows(t, ctx, "a run-now pending", func(rows map[string]row) bool { return rows["report"].Pending == "1 run-now" })
	waitFlash(t, ctx, `asked for a run of "report" (1 pending)`)
	waitFor(t, "every pod trying report and finding it held", func() bool {
		held := j.count(t, jHeld, "report", clicked)
		for _, p := range live {
			if held[p.name] == 0 {
				return false
			}
		}
		return true
	})
	require.Zero(t, total(j.runsSince(t, "report", start)), "report ran while the dashboard held its lock")
	require.NoError(t, d.report.Unlock(context.Background()))
	waitFor(t, "report run", func() bool { return total(j.runsSince(t, "report", start)) > 0 })
	waitRows(t, ctx, "no run-now pending", func(rows map[string]row) bool { return rows["report"].Pending == "" })
	aliveSince(t, j, live, time.Now())
	runs := j.runsSince(t, "report", start)
	assert.Equal(t, 1, total(runs), "one run-now, one run: %v", runs)
	assert.Zero(t, d.control(t, "report").RunRequests)
}

// unauthorized: without the operator's session the page offers no action,
// and a POST with the page's own token is refused; nothing changes.
func unauthorized(t *testing.T, ctx context.Context, d dashboard, j *journal, live []*pod) {
	require.NoError(t, d.logout(ctx))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(d.url), chromedp.WaitVisible(chromedp.CSS(`#live`))))
	rows := waitRows(t, ctx, "the locks", func(rows map[string]row) bool { return len(rows) > 0 })
	for _, r := range rows {
		assert.Zero(t, r.Actions, "actions offered without a session: %s", r.Name)
	}
	answer, err := eval[string](ctx, `fetch('api/run', {method: 'POST',
		headers: {'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content, 'Accept': 'application/json'},
		body: new URLSearchParams({name: 'report'})}).then(r => r.json().then(j => r.status + ' ' + j.message))`)
	require.NoError(t, err)
	assert.Equal(t, "403 refused: not an operator", answer)
	since := time.Now()
	aliveSince(t, j, live, since)
	assert.Zero(t, d.control(t, "report").RunRequests)
	assert.Equal(t, 1, total(j.runsSince(t, "report", time.Time{})), "report ran again, besides its run-now")
}

// crossSite: a page of another site posts a form to the dashboard, with the
// operator's session in the browser and even the page's token: refused by
// the cross-origin check, and tick is not paused.
func crossSite(t *testing.T, ctx context.Context, d dashboard, j *journal, live []*pod) {
	require.NoError(t, d.login(ctx))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(d.url), chromedp.WaitVisible(chromedp.CSS(`#live`))))
	token, err := eval[string](ctx, `document.querySelector('meta[name="csrf-token"]').content`)
	require.NoError(t, err)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%sapi/pause">
<input name="name" value="tick"><input name="csrf_token" value="%s"></form>
<script>document.getElementById('f').submit()</script>`, d.url, token)
	}))
	defer evil.Close()
	// localhost and 127.0.0.1 are different sites to the browser.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(evilURL)))
	waitFor(t, "the dashboard's answer to the form", func() bool { return hasText(ctx, "cross-origin") })
	where, err := eval[string](ctx, `location.href`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(where, d.url), "the form reached the dashboard: %s", where)
	since := time.Now()
	aliveSince(t, j, live, since)
	assert.False(t, d.control(t, "tick").Paused, "a cross-site POST paused tick")
	waitFor(t, "tick running", func() bool { return total(j.runsSince(t, "tick", since)) > 0 })
}

// screenshot pauses tick for an hour, through the page's "pause for", and
// saves the page, as an operator sees it, for the README.
func screenshot(t *testing.T, ctx context.Context, d dashboard, kind string) {
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(d.url),
		chromedp.WaitVisible(chromedp.CSS(`svg.timeline`)), chromedp.SetValue(chromedp.CSS(`#pause-for`), "1h")))
	before := time.Now()
	click(t, ctx, "tick", "pause")
	waitRows(t, ctx, "tick paused", func(rows map[string]row) bool { return rows["tick"].Paused })
	c := d.control(t, "tick")
	assert.WithinRange(t, c.PausedUntil, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := screenshotPath(t, kind)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
