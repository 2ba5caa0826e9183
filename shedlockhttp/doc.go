// Package shedlockhttp is an operators' dashboard for shedlock: an
// http.Handler a service mounts on its own mux, under any prefix.
//
//	rec := shedlockhttp.NewRecorder()
//	ex := shedlock.NewExecutor(provider, shedlock.WithListener(rec))
//	mux.Handle("/ops/locks/", http.StripPrefix("/ops/locks", shedlockhttp.NewHandler(provider,
//		shedlockhttp.WithRecorder(rec), shedlockhttp.WithJobs(ex))))
//
// The page shows every lock of the store (holder, time left, last success
// where the store records one, paused and until when, run-nows pending),
// leaders and their terms, and for the process that mounts it its jobs' next
// fire times (WithJobs), the missed fire times it found, and a timeline of its
// recent holds drawn as inline SVG (WithRecorder). It updates itself every
// few seconds without a reload, from a small script served with it; every
// asset is embedded, nothing is loaded from elsewhere. The same data is JSON
// beside it: api/locks, api/leaders, api/jobs, api/events.
//
// It is read-only unless the service passes WithAuthorize: then pause (for a
// while or until resumed), resume, run-now and force-unlock (of the
// acquisition shown, never a newer one) are offered to the requests the hook
// allows. Every action is a POST that must carry the handler's CSRF token
// (X-CSRF-Token header, or the csrf_token form field, both on the page) and
// pass net/http's CrossOriginProtection: a cross-site request is refused
// before anything is read. Every response carries a Content-Security-Policy
// that allows nothing from another origin and no inline script, and may not
// be framed.
//
// Pause, resume and run-now need a store that implements shedlock.Controller;
// on another the page shows the locks and offers force-unlock only.
package shedlockhttp
