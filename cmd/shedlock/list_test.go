package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

var columns = regexp.MustCompile(`\s{2,}`)

// parseTable splits list's table into rows of cells, by column name.
func parseTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := columns.Split(strings.TrimSpace(lines[0]), -1)
	want := []string{"NAME", "HELD", "TIME LEFT", "LOCK UNTIL (UTC)", "LOCKED AT (UTC)", "LOCKED BY"}
	if len(header) == len(want)+1 {
		want = append(want, "LAST SUCCESS (UTC)") // a CatchUp job's record
	}
	require.Equal(t, want, header)
	var rows []map[string]string
	for _, line := range lines[1:] {
		cells := columns.Split(strings.TrimSpace(line), -1)
		require.Len(t, cells, len(header), "row %q", line)
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func parseUTC(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(timeLayout, s)
	require.NoError(t, err, "time %q", s)
	return v
}

// setUpTwoLocks has pod A hold outboxPollJob for 10 minutes and pod B take and
// release cleanupJob.
func setUpTwoLocks(t *testing.T, tbl testTable) (a, b pod) {
	a, b = tbl.pod(t), tbl.pod(t)
	take(t, a, shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute})
	require.NoError(t, take(t, b, shedlock.LockConfig{Name: "cleanupJob", LockAtMostFor: time.Minute}).Unlock(context.Background()))
	return a, b
}

// list prints a row per lock, by name, with the holder, the times in UTC and
// the time left by the database's clock; an empty table says so.
func TestList(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		r := runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "no locks in "+tbl.where+"\n", r.stdout)

		before := time.Now().UTC().Add(-2 * time.Second)
		a, b := setUpTwoLocks(t, tbl)
		after := time.Now().UTC().Add(2 * time.Second)
		r = runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		t.Logf("list:\n%s", r.stdout)
		rows := parseTable(t, r.stdout)
		if !tbl.keepsFree { // Redis deleted the released lock's key
			require.Len(t, rows, 1)
			rows = append([]map[string]string{nil}, rows...)
		} else {
			require.Len(t, rows, 2)
			free := rows[0]
			assert.Equal(t, "cleanupJob", free["NAME"])
			assert.Equal(t, "no", free["HELD"])
			assert.Equal(t, "-", free["TIME LEFT"])
			assert.Regexp(t, "^"+regexp.QuoteMeta(b.LockedBy())+`\.\d+$`, free["LOCKED BY"])
		}
		held := rows[1]

		assert.Equal(t, "outboxPollJob", held["NAME"])
		assert.Equal(t, "yes", held["HELD"])
		left, err := time.ParseDuration(held["TIME LEFT"])
		require.NoError(t, err)
		assert.InDelta(t, 10*time.Minute, left, float64(5*time.Second))
		at, until := parseUTC(t, held["LOCKED AT (UTC)"]), parseUTC(t, held["LOCK UNTIL (UTC)"])
		assert.True(t, at.After(before) && at.Before(after), "locked at %v is now", at)
		assertHeldFor(t, tbl, 10*time.Minute, at, until)
		assert.Regexp(t, "^"+regexp.QuoteMeta(a.LockedBy())+`[.:#][-\w.]+$`, held["LOCKED BY"])
	})
}

// list -json prints an array with the table's column names; flags may come
// before the command too.
func TestListJSON(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		r := runCLI(t, "", append([]string{"-json"}, tbl.args("list")...)...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.JSONEq(t, "[]", r.stdout, "an empty table is an empty array")

		a, _ := setUpTwoLocks(t, tbl)
		r = runCLI(t, "", tbl.args("list", "-json")...)
		require.Equal(t, 0, r.code, r.stderr)
		var got []map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
		if !tbl.keepsFree {
			got = append([]map[string]any{nil}, got...)
		}
		require.Len(t, got, 2)
		for _, l := range got {
			if l == nil {
				continue
			}
			assert.ElementsMatch(t, []string{"name", "held", "time_left_ms", "lock_until", "locked_at", "locked_by"}, keys(l))
		}
		held := got[1]
		assert.Equal(t, "outboxPollJob", held["name"])
		assert.Equal(t, true, held["held"])
		assert.InDelta(t, 600_000, held["time_left_ms"], 5_000)
		assert.True(t, ownedBy(held["locked_by"].(string), a))
		at, err := time.Parse(time.RFC3339Nano, held["locked_at"].(string))
		require.NoError(t, err)
		until, err := time.Parse(time.RFC3339Nano, held["lock_until"].(string))
		require.NoError(t, err)
		assertHeldFor(t, tbl, 10*time.Minute, at, until)
		assert.True(t, strings.HasSuffix(held["locked_at"].(string), "Z"), "UTC")
		if tbl.keepsFree {
			assert.Equal(t, false, got[0]["held"])
			assert.EqualValues(t, 0, got[0]["time_left_ms"])
		}
	})
}

// assertHeldFor checks that a lock taken at at ends LockAtMostFor later. SQL
// stores write both times from the database's clock; Redis has only the key's
// time to live, and the time in its value is the holder's clock.
func assertHeldFor(t *testing.T, tbl testTable, want time.Duration, at, until time.Time) {
	t.Helper()
	if tbl.keepsFree {
		assert.Equal(t, want, until.Sub(at))
		return
	}
	assert.InDelta(t, want, until.Sub(at), float64(2*time.Second))
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A CatchUp job's last fire time that succeeded shows in its own column,
// and in -json, where the store records one; "-" for a lock without.
func TestListLastSuccess(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		ctx := context.Background()
		p := tbl.pod(t)
		fl, ok := p.(shedlock.FireLocker)
		require.True(t, ok, "%T records no fire times", p)
		fire := time.Now().Truncate(time.Second).Add(-time.Minute).UTC()
		catchUp := shedlock.LockConfig{Name: "nightlyReport", LockAtMostFor: time.Minute}
		l, err := fl.TryLockFire(ctx, catchUp, fire)
		if errors.Is(err, shedlock.ErrUnsafeStore) {
			r := runCLI(t, "", tbl.args("list")...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.NotContains(t, r.stdout, "LAST SUCCESS", "a table without last_success lists as before")
			return
		}
		require.NoError(t, err)
		require.NoError(t, l.UnlockSucceeded(ctx, time.Minute)) // held a minute, so that Redis keeps the key listed
		take(t, p, shedlock.LockConfig{Name: "plainJob", LockAtMostFor: time.Minute})

		r := runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		rows := parseTable(t, r.stdout)
		require.Len(t, rows, 2)
		byName := map[string]map[string]string{}
		for _, row := range rows {
			byName[row["NAME"]] = row
		}
		assert.Equal(t, fire.Format(timeLayout), byName["nightlyReport"]["LAST SUCCESS (UTC)"])
		assert.Equal(t, "-", byName["plainJob"]["LAST SUCCESS (UTC)"])

		r = runCLI(t, "", tbl.args("list", "-json")...)
		require.Equal(t, 0, r.code, r.stderr)
		var locks []lockJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &locks))
		for _, l := range locks {
			if l.Name == "nightlyReport" {
				require.NotNil(t, l.LastSuccess)
				assert.True(t, l.LastSuccess.Equal(fire))
			} else {
				assert.Nil(t, l.LastSuccess)
			}
		}
	})
}
