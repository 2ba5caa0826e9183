package shedlocketcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

func TestNewProviderOptions(t *testing.T) {
	cli := &clientv3.Client{} // never used: nothing is sent before TryLock
	for _, tc := range []struct {
		name string
		opts []shedlocketcd.Option
		ok   bool
	}{
		{"defaults", nil, true},
		{"env", []shedlocketcd.Option{shedlocketcd.WithEnv("prod")}, true},
		{"empty env", []shedlocketcd.Option{shedlocketcd.WithEnv("")}, false},
		{"env with colon", []shedlocketcd.Option{shedlocketcd.WithEnv("a:b")}, false},
		{"nil option", []shedlocketcd.Option{nil}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shedlocketcd.NewProvider(cli, tc.opts...)
			if tc.ok && err != nil {
				t.Fatalf("NewProvider: %v", err)
			}
			if !tc.ok && !errors.Is(err, shedlock.ErrInvalidOption) {
				t.Fatalf("NewProvider: %v, want ErrInvalidOption", err)
			}
		})
	}
	if _, err := shedlocketcd.NewProvider(nil); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Fatalf("NewProvider(nil): %v, want ErrInvalidOption", err)
	}
}

func TestKeysAreJavas(t *testing.T) {
	p, err := shedlocketcd.NewProvider(&clientv3.Client{}, shedlocketcd.WithLockedBy("pod-a"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Key("report"); got != "shedlock:default:report" {
		t.Fatalf("Key: %q, want Java's shedlock:default:report", got)
	}
	if p.LockedBy() != "pod-a" {
		t.Fatalf("LockedBy: %q", p.LockedBy())
	}
}

func TestInvalidConfigSendsNothing(t *testing.T) {
	p, err := shedlocketcd.NewProvider(&clientv3.Client{})
	if err != nil {
		t.Fatal(err)
	}
	// A zero client would panic on any request: the config is refused first.
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job"})
	if !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Fatalf("TryLock: %v, want ErrInvalidConfig", err)
	}
}

func TestTTLSecondsRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		time.Millisecond: 1, time.Second: 1, time.Second + time.Nanosecond: 2,
		2500 * time.Millisecond: 3, time.Minute: 60,
	} {
		if got := shedlocketcd.TTLSeconds(d); got != want {
			t.Errorf("TTLSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestParseValue(t *testing.T) {
	info := shedlocketcd.ParseValue("ADDED:2024-05-06T07:08:09.123Z@java-host")
	if info.LockedBy != "java-host" || !info.LockedAt.Equal(time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC)) {
		t.Fatalf("ParseValue: %+v", info)
	}
	if info := shedlocketcd.ParseValue("by hand"); info.LockedBy != "by hand" || !info.LockedAt.IsZero() {
		t.Fatalf("ParseValue of another form: %+v", info)
	}
}

// TryLockFire refuses what no store can record before sending anything: the
// client here has no connection.
func TestTryLockFireInputs(t *testing.T) {
	p, err := shedlocketcd.NewProvider(&clientv3.Client{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute}
	if _, err := p.TryLockFire(ctx, cfg, time.UnixMilli(-1)); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("fire time before 1970: %v; want ErrInvalidConfig", err)
	}
	if _, err := p.TryLockFire(ctx, shedlock.LockConfig{Name: "report"}, time.Now()); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("no LockAtMostFor: %v; want ErrInvalidConfig", err)
	}
}
