package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// watch prints the table again every interval, showing changes, until its
// context ends (an interrupt), and then exits 0.
func TestWatch(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		p := tbl.pod(t)
		lock := take(t, p, shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute})
		ctx, interrupt := context.WithCancel(context.Background())
		defer interrupt()
		var out, errOut syncBuffer
		code := make(chan int, 1)
		go func() { code <- run(ctx, tbl.args("watch", "-interval", "50ms"), strings.NewReader(""), &out, &errOut) }()

		frames := func() []string { return strings.Split(out.String(), "Ctrl-C stops\n")[1:] }
		waitFor(t, "a frame with the lock held", func() bool {
			f := frames()
			return len(f) > 0 && strings.Contains(f[0], "outboxPollJob  yes")
		})
		require.NoError(t, lock.Unlock(context.Background()))
		free := "outboxPollJob  no"
		if !tbl.keepsFree {
			free = "no locks in " + tbl.where
		}
		waitFor(t, "a later frame with the lock free", func() bool {
			f := frames()
			return strings.Contains(f[len(f)-1], free)
		})
		interrupt()
		select {
		case c := <-code:
			assert.Equal(t, 0, c, errOut.String())
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not end after the interrupt")
		}
		assert.Empty(t, errOut.String())
		f := frames()
		assert.Contains(t, out.String(), tbl.where+" (", "the header names the table")
		assert.Contains(t, f[0], "NAME  ", "each frame is the list table")
		assert.NotContains(t, out.String(), "\x1b[", "no screen clearing when not on a terminal")
	})
}

// A store that fails at the start is an error, not an empty view.
func TestWatchFailsAtStart(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", "watch", "-store", "mysql", "-dsn", "root@tcp(127.0.0.1:1)/test", "-interval", "10ms")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "connection refused")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not a synchronisation
	}
}
