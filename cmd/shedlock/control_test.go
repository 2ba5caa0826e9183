package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// steered reads a lock's pause and run-nows through the command's own list
// -json.
func steered(t *testing.T, tbl testTable, name string) lockJSON {
	t.Helper()
	r := runCLI(t, "", tbl.args("list", "-json")...)
	require.Equal(t, 0, r.code, r.stderr)
	var locks []lockJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &locks))
	for _, l := range locks {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no lock %q in %s", name, r.stdout)
	return lockJSON{}
}

// pause (for a while, and until resumed), resume and run, on every store:
// what each says, and what the store keeps, as list shows it.
func TestPauseResumeRun(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		const name = "nightlyReport"
		take(t, tbl.pod(t), shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})

		before := time.Now()
		r := runCLI(t, "", tbl.args("pause", name, "-for", "1h")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Regexp(t, `^paused "nightlyReport" on every instance until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\n$`, r.stdout)
		l := steered(t, tbl, name)
		require.True(t, l.Paused)
		require.NotNil(t, l.PausedUntil)
		assert.WithinRange(t, *l.PausedUntil, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))
		r = runCLI(t, "", tbl.args("list")...)
		assert.Contains(t, r.stdout, "PAUSED")
		assert.Contains(t, r.stdout, "until "+l.PausedUntil.UTC().Format(timeLayout)[:16])

		r = runCLI(t, "", tbl.args("pause", name)...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "paused \"nightlyReport\" on every instance until resumed (shedlock resume nightlyReport)\n", r.stdout)
		l = steered(t, tbl, name)
		assert.True(t, l.Paused)
		assert.Nil(t, l.PausedUntil, "until resumed")

		r = runCLI(t, "", tbl.args("resume", name)...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "resumed \"nightlyReport\"\n", r.stdout)
		assert.False(t, steered(t, tbl, name).Paused)

		for i := 1; i <= 2; i++ {
			r = runCLI(t, "", tbl.args("run", name)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "asked for a run of \"nightlyReport\": "+string(rune('0'+i))+" pending\n", r.stdout)
		}
		assert.EqualValues(t, 2, steered(t, tbl, name).RunRequests)
	})
}

// Bad usage is exit status 2 and one line; a store without pauses says so.
func TestPauseUsage(t *testing.T) {
	tbl := sqliteTable(t)
	for _, args := range [][]string{
		tbl.args("pause"), tbl.args("resume", "a", "b"), tbl.args("run"),
		tbl.args("pause", "job", "-for", "-1s"), tbl.args("pause", "job", "-for", "0s"),
	} {
		r := runCLI(t, "", args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
	plain := func(ctx context.Context, c config, create bool) (*store, error) {
		st, err := openStore(ctx, c, create)
		if err == nil {
			st.Admin = struct{ shedlock.Admin }{st.Admin} // an Admin and nothing more
		}
		return st, err
	}
	var out, errOut bytes.Buffer
	code := runWith(context.Background(), plain, tbl.args("pause", "job"), strings.NewReader(""), &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Equal(t, "shedlock pause: pause: the sqlite store here keeps no pause or run-now (it is no shedlock.Controller)\n", errOut.String())
}
