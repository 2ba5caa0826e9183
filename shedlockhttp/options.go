package shedlockhttp

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Option configures the handler. A bad value, or a nil option, is an error
// wrapping shedlock.ErrInvalidOption that names it; NewHandler panics with it,
// as regexp.MustCompile does with a bad pattern.
type Option func(*options) error

// JobLister is what tells the jobs this process runs: shedlock's Executor
// (its Jobs method).
type JobLister interface {
	Jobs() []shedlock.JobInfo
}

type options struct {
	authorize func(r *http.Request, a Action) error
	jobs      JobLister
	recorder  *Recorder
	leaders   []string
	refresh   time.Duration
	pageSize  int
	timeout   time.Duration
	title     string
	loginURL  string
	csrfKey   []byte
	log       *slog.Logger
}

func defaultOptions() options {
	return options{refresh: 2 * time.Second, pageSize: 200, timeout: 5 * time.Second,
		title: "shedlock", log: slog.Default()}
}

func invalid(opt, format string, args ...any) error {
	return fmt.Errorf("%w: shedlockhttp.%s: %s", shedlock.ErrInvalidOption, opt, fmt.Sprintf(format, args...))
}

// WithAuthorize makes the dashboard offer actions: f is asked for each one a
// request makes, and allows it by returning nil; its error is shown to the
// operator, so it should say why (not logged in, not an operator). The page
// also asks f, with an Action whose Name is empty, which actions to show the
// request. Without it the dashboard is read-only: every action is refused.
func WithAuthorize(f func(r *http.Request, a Action) error) Option {
	return func(o *options) error {
		if f == nil {
			return invalid("WithAuthorize", "nil function")
		}
		o.authorize = f
		return nil
	}
}

// WithJobs shows the jobs j runs in this process, with their next fire times:
// pass the Executor.
func WithJobs(j JobLister) Option {
	return func(o *options) error {
		if j == nil {
			return invalid("WithJobs", "nil JobLister")
		}
		o.jobs = j
		return nil
	}
}

// WithRecorder shows what rec recorded of this process's executors and
// leaders: the timeline of recent holds, leader terms, missed fire times and
// failures.
func WithRecorder(rec *Recorder) Option {
	return func(o *options) error {
		if rec == nil {
			return invalid("WithRecorder", "nil Recorder")
		}
		o.recorder = rec
		return nil
	}
}

// WithLeaders names the locks that are leaders' leases (shedlock.NewLeader's
// name), so that they are shown as leaders whichever instance leads; a
// Leader of this process whose events the Recorder sees is shown without it.
func WithLeaders(names ...string) Option {
	return func(o *options) error {
		for _, n := range names {
			if n == "" {
				return invalid("WithLeaders", "an empty name")
			}
		}
		o.leaders = append(o.leaders, names...)
		return nil
	}
}

// WithRefresh sets how often the page updates itself (default 2 s; at least
// 200 ms).
func WithRefresh(d time.Duration) Option {
	return func(o *options) error {
		if d < 200*time.Millisecond {
			return invalid("WithRefresh", "%v: at least 200ms", d)
		}
		o.refresh = d
		return nil
	}
}

// WithPageSize sets how many locks the page shows at once (default 200; 1 to
// 5000); a filter and page links reach the rest.
func WithPageSize(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 5000 {
			return invalid("WithPageSize", "%d: want 1 to 5000", n)
		}
		o.pageSize = n
		return nil
	}
}

// WithTimeout bounds each request's work with the store (default 5 s).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return invalid("WithTimeout", "%v: must be > 0", d)
		}
		o.timeout = d
		return nil
	}
}

// WithTitle sets the page's title (default "shedlock"): the service's name.
func WithTitle(title string) Option {
	return func(o *options) error {
		if title == "" {
			return invalid("WithTitle", "empty")
		}
		o.title = title
		return nil
	}
}

// WithLoginURL links the page to where an operator logs in, shown while the
// request may take no action. A relative URL is relative to the page.
func WithLoginURL(u string) Option {
	return func(o *options) error {
		if u == "" {
			return invalid("WithLoginURL", "empty")
		}
		o.loginURL = u
		return nil
	}
}

// WithCSRFKey derives the handler's CSRF token from key (at least 16 bytes,
// secret) instead of making one at random: every replica of a service given
// the same key accepts the pages of the others, as a load balancer that
// sends a page's POST to another replica needs.
func WithCSRFKey(key []byte) Option {
	return func(o *options) error {
		if len(key) < 16 {
			return invalid("WithCSRFKey", "%d bytes: at least 16", len(key))
		}
		o.csrfKey = slices.Clone(key)
		return nil
	}
}

// WithLogger logs the actions taken and the store's failures (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return invalid("WithLogger", "nil logger")
		}
		o.log = l
		return nil
	}
}
