package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

func TestDisplay(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"pod-7c9f#3f9c.17":     "pod-7c9f#3f9c.17",
		"orders émoji 🙂":       "orders émoji 🙂",
		"":                     `""`,
		"a\rb":                 `"a\rb"`,
		"x\x1b[2Ky":            `"x\x1b[2Ky"`,
		"say \"hi\"":           `"say \"hi\""`,
		"rtl\u202eevil":        `"rtl\u202eevil"`,
		"bad\xffutf8":          `"bad\xffutf8"`,
		"nbsp\u00a0in between": `"nbsp\u00a0in between"`,
	} {
		assert.Equal(t, want, display(in), "display(%q)", in)
	}
	assert.Equal(t, `no such lock: "a\rb" \x1b[2K`, sanitize("no such lock: \"a\rb\" \x1b[2K"))
	assert.Equal(t, `bad \xff byte, tab	kept, � kept`, sanitize("bad \xff byte, tab\tkept, \uFFFD kept"))
}

// A holder written by anyone who can write the table cannot fake the prompt or
// the listing: control characters are shown escaped, on every store.
func TestControlCharactersShownEscaped(t *testing.T) {
	evil := "pod-a\r\x1b[2KLock \"job\" is free.\nUnlock it? [y/N] "
	forEachTable(t, func(t *testing.T, tbl testTable) {
		take(t, tbl.pod(t), shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute})
		tbl.setHolder(t, "job", evil)

		r := runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "\r")
		assert.NotContains(t, r.stdout, "\x1b")
		assert.Contains(t, r.stdout, `"pod-a\r\x1b[2KLock \"job\" is free.\nUnlock it? [y/N] "`)

		r = runCLI(t, "n\n", tbl.args("unlock", "job")...)
		assert.Equal(t, 1, r.code)
		assert.Equal(t, 3, strings.Count(r.stderr, "\n"), "the question's lines and the error: %q", r.stderr)
		assert.Contains(t, r.stderr, `Lock "job" is held by "pod-a\r\x1b[2KLock \"job\" is free.\nUnlock it? [y/N] " for `)
		assert.NotContains(t, r.stderr, "\x1b")
	})
}

// sqlSetHolder returns a testTable.setHolder for a SQL table: update names
// the table TABLE, with the driver's placeholders.
func sqlSetHolder(db func(t *testing.T) *sql.DB, table, update string) func(t *testing.T, name, holder string) {
	return func(t *testing.T, name, holder string) {
		_, err := db(t).ExecContext(context.Background(), strings.ReplaceAll(update, "TABLE", table), holder, name)
		require.NoError(t, err)
	}
}

// An error that wraps another of the library's says "shedlock: " once: the
// command's own prefix stands for both.
func TestOneLineDropsRepeatedPrefix(t *testing.T) {
	t.Parallel()
	lost := errors.New("shedlock: lock lost") // as the library's sentinels read
	err := fmt.Errorf("shedlock: acquire %q: %w", "job", fmt.Errorf("%w: dial tcp: refused\nretry", lost))
	assert.Equal(t, `acquire "job": lock lost: dial tcp: refused; retry`, oneLine(err))
	assert.Equal(t, "table shedlock: missing", oneLine(errors.New("table shedlock: missing")), "a table named shedlock keeps its name")
}
