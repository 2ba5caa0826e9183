// Package browser tests the operators' control room across OS processes, on
// MySQL/MariaDB, PostgreSQL, SQLite, Redis and etcd: five pods (this test
// binary run again) on each store, each an executor that checks for run-now
// requests, steered through the store (TestPodsPauseAndRunNow: a pause stops
// every pod, 100 run-nows are 100 runs, also with a run's pod SIGKILLed), and
// the dashboard (shedlockhttp) in headless Chromium driven by chromedp, one
// tab per store (TestBrowserDashboard). The pods journal what they run to a
// file the tests count from. It is a module of its own so that neither
// shedlockhttp nor the integration module requires chromedp. make check runs
// it (scripts/test's slow lane); make test only compiles it.
package browser
