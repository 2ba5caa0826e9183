// Package browser tests the dashboard (shedlockhttp) in a real browser:
// headless Chromium driven by chromedp, against pods that are OS processes
// sharing one SQLite lock table. It is a module of its own so that neither
// shedlockhttp nor the integration module requires chromedp. make check runs
// it (scripts/test's slow lane); make test only compiles it.
package browser
