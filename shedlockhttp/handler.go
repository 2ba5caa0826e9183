package shedlockhttp

import (
	"net/http"
	"strings"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/apply"
)

// handler is the dashboard NewHandler returns.
type handler struct {
	admin   shedlock.Admin
	control shedlock.Controller // nil: the store has no pause or run-now
	o       options
	csrf    string
	cop     *http.CrossOriginProtection
	fires   *lastFires
	static  http.Handler
}

// NewHandler returns the dashboard of admin's locks, read-only unless
// WithAuthorize is given. Mount it under any prefix, with http.StripPrefix or
// without: it routes on the end of the path (…/, …/api/locks). A bad or nil
// option panics with an error wrapping shedlock.ErrInvalidOption, as does a
// nil admin.
func NewHandler(admin shedlock.Admin, opts ...Option) http.Handler {
	if admin == nil {
		panic(invalid("NewHandler", "nil Admin"))
	}
	o := defaultOptions()
	if err := apply.Options("shedlockhttp.NewHandler", &o, opts); err != nil {
		panic(err)
	}
	h := &handler{admin: admin, o: o, csrf: newToken(o.csrfKey), cop: http.NewCrossOriginProtection(),
		fires: newLastFires(admin, 10*o.refresh), static: staticHandler()}
	h.control, _ = admin.(shedlock.Controller)
	return h
}

// routes: the end of a request's path, after the mount point.
var getRoutes = map[string]func(h *handler, w http.ResponseWriter, r *http.Request){
	"":            (*handler).page,
	"live":        (*handler).live,
	"api/locks":   (*handler).apiLocks,
	"api/leaders": (*handler).apiLeaders,
	"api/jobs":    (*handler).apiJobs,
	"api/events":  (*handler).apiEvents,
}

// knownRoutes are the paths the handler serves below its mount point.
var knownRoutes = []string{"live", "api/locks", "api/leaders", "api/jobs", "api/events",
	"api/pause", "api/resume", "api/run", "api/unlock", "static/app.js", "static/app.css"}

// route returns the route path ends with, whatever the mount point: "" for
// the page (a path ending in "/"), "?" for none.
func route(path string) string {
	for _, rt := range knownRoutes {
		if path == rt || strings.HasSuffix(path, "/"+rt) {
			return rt
		}
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return ""
	}
	return "?"
}

// ServeHTTP routes a request; every response carries the security headers.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	rt := route(r.URL.Path)
	if strings.HasPrefix(rt, "static/") {
		h.serveStatic(w, r, rt)
		return
	}
	if kind, ok := actionRoute(rt); ok {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "actions are POSTs", http.StatusMethodNotAllowed)
			return
		}
		h.act(w, r, kind)
		return
	}
	serve, ok := getRoutes[rt]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read with GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	serve(h, w, r)
}

// contentSecurityPolicy allows this origin's scripts, styles and fetches
// only, no inline script, no plugin, no framing, forms to this origin only.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
}
