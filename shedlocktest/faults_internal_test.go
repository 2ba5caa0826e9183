package shedlocktest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFaultsDo(t *testing.T) {
	var f Faults
	calls := 0
	ok := func(context.Context) error { calls++; return nil }
	refused := errors.New("refused")

	if err := f.Do(context.Background(), ok); err != nil || calls != 1 || f.Fired() != 0 {
		t.Fatalf("unarmed: err %v, %d calls, %d fired; want nil, 1, 0", err, calls, f.Fired())
	}

	calls = 0
	f.Arm(AnswerLost)
	if err := f.Do(context.Background(), func(context.Context) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a call that fails: want its error, got %v", err)
	}
	if f.Fired() != 0 || f.Pending() != 1 {
		t.Fatalf("a call that fails: %d fired, %d pending; want the fault kept for the next write", f.Fired(), f.Pending())
	}
	if err := f.Do(context.Background(), ok); !errors.Is(err, ErrAnswerLost) || calls != 1 || f.Fired() != 1 {
		t.Fatalf("AnswerLost: err %v, %d calls, %d fired; want ErrAnswerLost, 1, 1", err, calls, f.Fired())
	}

	calls = 0
	f.Arm(Replayed)
	second := errors.New("the second answer")
	if err := f.Do(context.Background(), func(context.Context) error {
		if calls++; calls == 2 {
			return second
		}
		return nil
	}); !errors.Is(err, second) || calls != 2 {
		t.Fatalf("Replayed: err %v after %d calls; want the second answer after 2", err, calls)
	}

	calls = 0
	f.Arm(AnswerLate)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var callCtxErr error
	err := f.Do(ctx, func(ctx context.Context) error {
		calls++
		<-time.After(60 * time.Millisecond) // outlasts the caller's deadline: the write goes on
		callCtxErr = ctx.Err()
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 || callCtxErr != nil {
		t.Fatalf("AnswerLate: err %v, %d calls, the call's context %v; want DeadlineExceeded, 1, not ended", err, calls, callCtxErr)
	}
	f.Arm(AnswerLate)
	if err := f.Do(context.Background(), ok); !errors.Is(err, ErrAnswerLost) {
		t.Fatalf("AnswerLate without a deadline: want ErrAnswerLost, got %v", err)
	}
	f.Arm(AnswerLost)
	if n := f.Disarm(); n != 1 || f.Pending() != 0 {
		t.Fatalf("Disarm: %d removed, %d pending; want 1, 0", n, f.Pending())
	}
}

func TestIsWrite(t *testing.T) {
	for q, want := range map[string]bool{
		"INSERT INTO t (name) VALUES (?) ON DUPLICATE KEY UPDATE x = 1": true,
		"update t set lock_until = now() where name = $1":               true,
		"DELETE FROM t": true,
		"SELECT COUNT(*) FROM t WHERE name = ? AND locked_by = ?":            false,
		"SELECT current_setting('server_version_num')::int":                  false,
		"SELECT a.attname FROM pg_attribute a WHERE a.attrelid = $1":         false,
		"SELECT updated_at FROM t":                                           false,
		"WITH x AS (SELECT 1) UPDATE t SET a = 1 FROM x RETURNING locked_by": true,
	} {
		if got := isWrite(q); got != want {
			t.Errorf("isWrite(%q) = %v, want %v", q, got, want)
		}
	}
}
