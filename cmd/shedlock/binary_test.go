package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// The built binary, end to end: list on each store, and bad input as one line
// on stderr with a non-zero exit status, no stack trace.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "shedlock")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	exe := func(stdin string, args ...string) (code int, stdout, stderr string) {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), o.String(), e.String()
		}
		require.NoError(t, err)
		return 0, o.String(), e.String()
	}

	for name, newTable := range tables() {
		tbl := newTable(t)
		p := tbl.pod(t)
		lock := take(t, p, shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute})
		code, stdout, stderr := exe("", tbl.args("list")...)
		require.Equal(t, 0, code, stderr)
		t.Logf("%s: shedlock list\n%s", name, stdout)
		rows := parseTable(t, stdout)
		require.Len(t, rows, 1)
		assert.Equal(t, "yes", rows[0]["HELD"])

		code, _, stderr = exe("n\n", tbl.args("unlock", "outboxPollJob")...)
		assert.Equal(t, 1, code, "declined")
		assert.Contains(t, stderr, "Unlock it? [y/N]")
		code, stdout, stderr = exe("", tbl.args("unlock", "-force", "outboxPollJob")...)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "taken from "+p.LockedBy())
		require.ErrorIs(t, lock.Unlock(context.Background()), shedlock.ErrLockLost)
	}

	for _, args := range [][]string{
		{"list", "-dsn", "root@tcp(127.0.0.1:1)/test"},
		{"list", "-dsn", "postgres://root@127.0.0.1:1/test"},
		{"list", "-dsn", "redis://127.0.0.1:1/0"}, // go-redis logs dial errors itself unless told not to
		{"list", "-dsn", "postgres://%zz"},
		{"frobnicate"},
		{"list", "-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "none.db")},
	} {
		code, stdout, stderr := exe("", args...)
		assert.NotEqual(t, 0, code, "%v", args)
		assert.Empty(t, stdout)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "%v: one line, got %q", args, stderr)
		assert.NotContains(t, stderr, "goroutine")
		assert.NotContains(t, stderr, "panic")
	}
}
