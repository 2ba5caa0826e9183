package shedlockhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock"
)

// maxFormBytes bounds an action's body: a name, a duration, a token.
const maxFormBytes = 16 << 10

// maxPause bounds a pause's duration: a pause is for an incident, and a
// typo of "1000h" should not outlive everyone's memory of it.
const maxPause = 366 * 24 * time.Hour

func actionRoute(rt string) (ActionKind, bool) {
	for _, k := range actionKinds {
		if rt == "api/"+k.String() {
			return k, true
		}
	}
	return 0, false
}

// actError is an action refused or failed: the status and what to show.
type actError struct {
	status int
	msg    string
}

func (e *actError) Error() string { return e.msg }

// act runs one action, after the checks that a request from elsewhere or
// without the page's token fails before anything is read or changed.
func (h *handler) act(w http.ResponseWriter, r *http.Request, kind ActionKind) {
	msg, err := h.try(w, r, kind)
	var ae *actError
	if err != nil && !errors.As(err, &ae) {
		ae = &actError{http.StatusInternalServerError, err.Error()}
	}
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		body := map[string]any{"ok": err == nil, "message": msg}
		if ae != nil {
			w.WriteHeader(ae.status)
			body["message"] = ae.msg
		}
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	if ae != nil {
		http.Error(w, ae.msg, ae.status)
		return
	}
	// The action's path is <mount>/api/<kind>: the page is one level up. Set
	// as it is, for the browser to resolve: http.Redirect would resolve it
	// against the path after http.StripPrefix.
	w.Header().Set("Location", "../")
	w.WriteHeader(http.StatusSeeOther)
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func (h *handler) try(w http.ResponseWriter, r *http.Request, kind ActionKind) (string, error) {
	if err := h.cop.Check(r); err != nil {
		return "", &actError{http.StatusForbidden, "refused: a cross-origin request (" + err.Error() + ")"}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return "", &actError{http.StatusBadRequest, "a malformed form: " + err.Error()}
	}
	if !h.checkToken(r) {
		return "", &actError{http.StatusForbidden, "refused: no valid CSRF token (reload the page)"}
	}
	if h.o.authorize == nil {
		return "", &actError{http.StatusForbidden,
			"refused: this dashboard is read-only (the service gave no shedlockhttp.WithAuthorize)"}
	}
	a, seen, err := parseAction(r, kind)
	if err != nil {
		return "", &actError{http.StatusBadRequest, err.Error()}
	}
	if err := h.o.authorize(r, a); err != nil {
		return "", &actError{http.StatusForbidden, "refused: " + err.Error()}
	}
	if h.control == nil && kind != ActionUnlock {
		return "", &actError{http.StatusNotImplemented,
			fmt.Sprintf("%s: this store has no pause or run-now (shedlock.Controller)", kind)}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.o.timeout)
	defer cancel()
	msg, err := h.do(ctx, a, seen)
	if err != nil {
		h.o.log.Warn("shedlockhttp: action failed", "action", kind.String(), "lock", a.Name, "err", err)
		return "", storeError(err)
	}
	h.o.log.Info("shedlockhttp: action", "action", kind.String(), "lock", a.Name, "until", a.Until,
		"remote", r.RemoteAddr, "result", msg)
	return msg, nil
}

// parseAction reads the action's form: name, and for a pause "for" (a
// duration) or "until" (RFC 3339); for an unlock the acquisition shown,
// "locked_by" and "locked_at".
func parseAction(r *http.Request, kind ActionKind) (Action, shedlock.LockInfo, error) {
	a := Action{Kind: kind, Name: r.PostFormValue("name")}
	var seen shedlock.LockInfo
	if a.Name == "" {
		return a, seen, errors.New("no lock name (form field name)")
	}
	switch kind {
	case ActionPause:
		until, err := pauseUntil(r.PostFormValue("for"), r.PostFormValue("until"), time.Now())
		if err != nil {
			return a, seen, err
		}
		a.Until = until
	case ActionUnlock:
		at, err := time.Parse(time.RFC3339Nano, r.PostFormValue("locked_at"))
		if err != nil {
			return a, seen, fmt.Errorf("locked_at: the acquisition shown, as RFC 3339: %w", err)
		}
		seen = shedlock.LockInfo{Name: a.Name, LockedBy: r.PostFormValue("locked_by"), LockedAt: at}
	}
	return a, seen, nil
}

// pauseUntil reads a pause's end: a duration from now, a time, or neither
// (until resumed).
func pauseUntil(forValue, untilValue string, now time.Time) (time.Time, error) {
	switch {
	case forValue != "" && untilValue != "":
		return time.Time{}, errors.New("give for or until, not both")
	case forValue != "":
		d, err := time.ParseDuration(forValue)
		if err != nil || d <= 0 || d > maxPause {
			return time.Time{}, fmt.Errorf("for %q: want a duration such as 30m or 4h, at most %v", forValue, maxPause)
		}
		return now.Add(d).UTC(), nil
	case untilValue != "":
		t, err := time.Parse(time.RFC3339, untilValue)
		if err != nil || !t.After(now) || t.Sub(now) > maxPause {
			return time.Time{}, fmt.Errorf("until %q: want an RFC 3339 time in the next %v", untilValue, maxPause)
		}
		return t.UTC(), nil
	}
	return time.Time{}, nil
}

// do carries the action out on the store and says what it did.
func (h *handler) do(ctx context.Context, a Action, seen shedlock.LockInfo) (string, error) {
	switch a.Kind {
	case ActionPause:
		if err := h.control.Pause(ctx, a.Name, a.Until); err != nil {
			return "", err
		}
		if a.Until.IsZero() {
			return fmt.Sprintf("paused %q until resumed", a.Name), nil
		}
		return fmt.Sprintf("paused %q until %s", a.Name, a.Until.Format(timeLayout)), nil
	case ActionResume:
		return fmt.Sprintf("resumed %q", a.Name), h.control.Resume(ctx, a.Name)
	case ActionRunNow:
		n, err := h.control.RunNow(ctx, a.Name)
		return fmt.Sprintf("asked for a run of %q (%d pending)", a.Name, n), err
	}
	was, err := h.admin.ForceUnlockSeen(ctx, seen)
	return fmt.Sprintf("unlocked %q: taken from %s", a.Name, was.LockedBy), err
}

func storeError(err error) error {
	switch {
	case errors.Is(err, shedlock.ErrLockNotFound):
		return &actError{http.StatusNotFound, err.Error()}
	case errors.Is(err, shedlock.ErrLockChanged):
		return &actError{http.StatusConflict, err.Error() + " (nothing was freed; look again)"}
	case errors.Is(err, shedlock.ErrInvalidConfig):
		return &actError{http.StatusBadRequest, err.Error()}
	}
	return &actError{http.StatusBadGateway, "the store: " + err.Error()}
}
