package kvstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/kvstore"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

type options struct{ kvstore.Options }

type option func(*options) error

func TestConfigure(t *testing.T) {
	o := options{Options: kvstore.Options{Env: "default"}}
	err := kvstore.Configure("store.NewProvider", true, &o, []option{func(o *options) error { return o.SetEnv("store", "x") }})
	if !errors.Is(err, lockerr.InvalidOption) || err.Error() != "shedlock: invalid option: store.NewProvider: nil client" || o.Env != "default" {
		t.Fatalf("nil client: %v, env %q: want the error before any option", err, o.Env)
	}
	for _, env := range []string{"", "a:b"} {
		err := kvstore.Configure("store.NewProvider", false, &o, []option{func(o *options) error { return o.SetEnv("store", env) }})
		if !errors.Is(err, lockerr.InvalidOption) || !strings.Contains(err.Error(), "store.WithEnv(") {
			t.Errorf("env %q: %v", env, err)
		}
	}
	err = kvstore.Configure("store.NewProvider", false, &o, []option{
		func(o *options) error { return o.SetEnv("store", "prod") },
		func(o *options) error { return o.SetLockedBy("pod-a") },
	})
	if err != nil || o.Env != "prod" || o.LockedBy != "pod-a" {
		t.Fatalf("options: %v, %+v", err, o)
	}
}

func TestOwnerValues(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.FixedZone("x", 3600))
	a, b := kvstore.NewOwner("pod-a", ':', '-'), kvstore.NewOwner("pod-a", ':', '-')
	seen := map[string]bool{}
	for _, o := range []*kvstore.Owner{a, b, a, b} {
		v := o.Value(at)
		if seen[v] {
			t.Fatalf("value %q written twice", v)
		}
		seen[v] = true
		when, by, ok := kvstore.ParseValue(v)
		if !ok || !when.Equal(at) || !strings.HasPrefix(by, "pod-a:") || !strings.HasPrefix(v, "ADDED:2024-05-06T06:08:09.123Z@pod-a:") {
			t.Fatalf("value %q reads as %v %q %v", v, when, by, ok)
		}
	}
	if h := kvstore.NewOwner("", '#', '.'); h.LockedBy() != kvstore.HostName() || h.LockedBy() == "" {
		t.Fatalf("default owner %q, want the host name", h.LockedBy())
	}
	for _, v := range []string{"by hand", "ADDED:yesterday@x", "ADDED:2024-05-06T07:08:09Z"} {
		if _, _, ok := kvstore.ParseValue(v); ok {
			t.Errorf("ParseValue(%q): ok", v)
		}
	}
}

func TestSpace(t *testing.T) {
	s := kvstore.NewSpace("job-lock", "prod")
	if s.Prefix() != "job-lock:prod:" || s.Key("a") != "job-lock:prod:a" || s.Name("job-lock:prod:a") != "a" || s.Where() != "env prod" {
		t.Fatalf("space: %q %q %q %q", s.Prefix(), s.Key("a"), s.Name("job-lock:prod:a"), s.Where())
	}
	err := s.NotFound("a")
	if !errors.Is(err, lockerr.LockNotFound) || !strings.HasSuffix(err.Error(), `"a" in env prod (no key job-lock:prod:a: nobody holds it)`) {
		t.Fatalf("NotFound: %v", err)
	}
}

func TestHold(t *testing.T) {
	var h kvstore.Hold
	end := time.Now().Add(time.Hour)
	if err := h.Check("job", func() time.Time { return end }); err != nil {
		t.Fatalf("held: %v", err)
	}
	past := time.Now()
	if err := h.Check("job", func() time.Time { return past }); !errors.Is(err, lockerr.LockExpired) {
		t.Fatalf("past its end: %v", err)
	}
	if err := h.Enter(); err != nil {
		t.Fatalf("Enter: %v", err)
	}
	// A second writer waits for the first to exit, and then finds it done.
	entered := make(chan error)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		entered <- h.Enter()
	}()
	h.Finish()
	h.Exit()
	if err := <-entered; !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("Enter after Finish: %v", err)
	}
	wg.Wait()
	if err := h.Check("job", func() time.Time { return end }); !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("done: %v", err)
	}
}

type ownLock struct{ name string }

func (l *ownLock) Own() *ownLock { return l }

type wrapped struct{ *ownLock }

func (w *wrapped) Own() *ownLock {
	if w == nil {
		return nil
	}
	return w.ownLock
}

func TestOwn(t *testing.T) {
	nameOf := func(l *ownLock) string { return l.name }
	l := &ownLock{name: "job"}
	for _, held := range []any{l, &wrapped{l}} {
		if got, err := kvstore.Own("store", "job", held, nameOf); got != l || err != nil {
			t.Errorf("Own(%T): %v, %v", held, got, err)
		}
	}
	for _, held := range []any{(*wrapped)(nil), (*ownLock)(nil), "a string", nil} {
		if _, err := kvstore.Own("store", "job", held, nameOf); !errors.Is(err, lockerr.InvalidConfig) || !strings.Contains(err.Error(), "is not a lock of store") {
			t.Errorf("Own(%T): %v", held, err)
		}
	}
	if _, err := kvstore.Own("store", "other", l, nameOf); !errors.Is(err, lockerr.InvalidConfig) || !strings.Contains(err.Error(), `the lock passed is "job"'s`) {
		t.Errorf("another name's lock: %v", err)
	}
}
