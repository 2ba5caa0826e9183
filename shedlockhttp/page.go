package shedlockhttp

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

//go:embed assets
var assets embed.FS

// timeLayout is how times are shown: UTC, to the millisecond the stores keep.
const timeLayout = "2006-01-02 15:04:05.000"

var pageTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"ts":   formatTime,
	"rfc":  func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"rel":  relative,
	"left": func(t, now time.Time) string { return formatLeft(max(t.Sub(now), 0)) },
	"ms":   func(ms int64) string { return formatLeft(time.Duration(ms) * time.Millisecond) },
	"dur":  func(a, b time.Time) string { return b.Sub(a).Round(time.Millisecond).String() },
}).ParseFS(assets, "assets/*.html"))

// pageData is what the templates are given.
type pageData struct {
	Title     string
	CSRF      string
	LoginURL  string
	RefreshMS int64
	// Can says which actions to offer this request, by ActionKind.String().
	Can    map[string]bool
	CanAny bool
	V      view
	TL     timeline
	PageNo int
	Pages  int
	// ShowLastSuccess and ShowNext: a lock shown has one.
	ShowLastSuccess bool
	ShowNext        bool
	Prev            string
	Next            string
	PauseFors       []string
}

// pauseFors are the durations the page offers a pause for.
var pauseFors = []string{"15m", "1h", "4h", "24h"}

func (h *handler) data(r *http.Request) pageData {
	q := h.queryOf(r, false)
	v := h.build(r.Context(), q)
	d := pageData{Title: h.o.title, CSRF: h.csrf, LoginURL: h.o.loginURL, RefreshMS: h.o.refresh.Milliseconds(),
		Can: map[string]bool{}, V: v, TL: newTimeline(v.Record, v.Now), PauseFors: pauseFors}
	for _, k := range actionKinds {
		if k != ActionUnlock && h.control == nil {
			continue
		}
		if h.o.authorize != nil && h.o.authorize(r, Action{Kind: k}) == nil {
			d.Can[k.String()], d.CanAny = true, true
		}
	}
	for _, l := range v.Page.Locks {
		d.ShowLastSuccess = d.ShowLastSuccess || !l.LastSuccess.IsZero()
		d.ShowNext = d.ShowNext || !l.Next.IsZero()
	}
	d.PageNo = q.Offset/q.Limit + 1
	d.Pages = max((v.Page.Matching+q.Limit-1)/q.Limit, 1)
	link := func(page int) string {
		u := url.Values{}
		if q.Q != "" {
			u.Set("q", q.Q)
		}
		if q.State != "" {
			u.Set("state", q.State)
		}
		u.Set("page", strconv.Itoa(page))
		return "?" + u.Encode()
	}
	if d.PageNo > 1 {
		d.Prev = link(d.PageNo - 1)
	}
	if d.PageNo < d.Pages {
		d.Next = link(d.PageNo + 1)
	}
	return d
}

// page serves the dashboard.
func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	h.render(w, "page", h.data(r))
}

// live serves the part of the page that the script replaces on each
// refresh: the same HTML, without the page around it.
func (h *handler) live(w http.ResponseWriter, r *http.Request) {
	h.render(w, "live", h.data(r))
}

func (h *handler) render(w http.ResponseWriter, name string, d pageData) {
	var b bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&b, name, d); err != nil {
		h.o.log.Error("shedlockhttp: render", "template", name, "err", err)
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// staticHandler serves the script and the style sheet.
func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.FileServerFS(sub)
}

func (h *handler) serveStatic(w http.ResponseWriter, r *http.Request, rt string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read with GET", http.StatusMethodNotAllowed)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rt[len("static/"):]
	w.Header().Set("Cache-Control", "no-cache")
	h.static.ServeHTTP(w, r2)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// relative says when t is from now: "in 12s", "3m4s ago".
func relative(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	if d >= 0 {
		return "in " + formatLeft(d)
	}
	return formatLeft(-d) + " ago"
}

// formatLeft rounds d for reading, as the command's list does.
func formatLeft(d time.Duration) string {
	switch {
	case d < 0:
		return "no expiry"
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d < 100*time.Millisecond:
		return "<0.1s"
	}
	return fmt.Sprint(d.Round(100 * time.Millisecond))
}
