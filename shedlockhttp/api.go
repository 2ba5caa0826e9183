package shedlockhttp

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// queryOf reads a request's lock query: q, state, and offset and limit
// (api/locks) or page (the page, from 1).
func (h *handler) queryOf(r *http.Request, api bool) lockQuery {
	v := r.URL.Query()
	q := lockQuery{Q: v.Get("q"), State: v.Get("state"), Limit: h.o.pageSize}
	switch q.State {
	case "", "held", "paused", "pending":
	default:
		q.State = ""
	}
	if api {
		if n, err := strconv.Atoi(v.Get("limit")); err == nil && n > 0 {
			q.Limit = min(n, maxAPILimit)
		}
		if n, err := strconv.Atoi(v.Get("offset")); err == nil && n > 0 {
			q.Offset = n
		}
		return q
	}
	if n, err := strconv.Atoi(v.Get("page")); err == nil && n > 1 {
		q.Offset = (n - 1) * q.Limit
	}
	return q
}

// maxAPILimit bounds api/locks's limit: each lock shown may cost the store a
// statement for its last success.
const maxAPILimit = 10000

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}

// apiLocks serves GET api/locks?q=&state=&offset=&limit=: counts of the
// whole table and one page of locks (limit default the page size).
func (h *handler) apiLocks(w http.ResponseWriter, r *http.Request) {
	v := h.build(r.Context(), h.queryOf(r, true))
	if v.StoreErr != "" {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": v.StoreErr})
		return
	}
	if v.Page.Locks == nil {
		v.Page.Locks = []lockView{}
	}
	writeJSON(w, http.StatusOK, v.Page)
}

// apiLeaders serves GET api/leaders: each leader's lease and this process's
// terms.
func (h *handler) apiLeaders(w http.ResponseWriter, r *http.Request) {
	v := h.build(r.Context(), lockQuery{Limit: 1})
	writeJSON(w, http.StatusOK, map[string]any{"leaders": v.Leaders})
}

// apiJobs serves GET api/jobs: this process's jobs, with their next fire
// times; available is false without WithJobs.
func (h *handler) apiJobs(w http.ResponseWriter, r *http.Request) {
	v := h.build(r.Context(), lockQuery{Limit: 1})
	writeJSON(w, http.StatusOK, map[string]any{"available": v.HasJobs, "jobs": v.Jobs})
}

// apiEvents serves GET api/events: what the Recorder holds (holds, terms,
// missed fire times, failures), oldest first; available is false without
// WithRecorder.
func (h *handler) apiEvents(w http.ResponseWriter, _ *http.Request) {
	rec := h.o.recorder.snapshot()
	out := map[string]any{"available": h.o.recorder != nil, "holds": nonNil(rec.Holds), "terms": nonNil(rec.Terms),
		"missed": nonNil(rec.Missed), "events": nonNil(rec.Events)}
	writeJSON(w, http.StatusOK, out)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
