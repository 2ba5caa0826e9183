package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

var liveLock = shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: time.Minute}

// heldBy reports who holds name now, by the command's own JSON listing.
func heldBy(t *testing.T, tbl testTable, name string) (holder string, held bool) {
	t.Helper()
	r := runCLI(t, "", tbl.args("list", "-json")...)
	require.Equal(t, 0, r.code, r.stderr)
	m := regexp.MustCompile(`"name": "` + name + `",\s*"held": (true|false),[^}]*"locked_by": "([^"]*)"`).FindStringSubmatch(r.stdout)
	if m == nil && !tbl.keepsFree {
		return "", false // Redis: no key, no lock
	}
	require.NotNil(t, m, "lock %q in %s", name, r.stdout)
	return m[2], m[1] == "true"
}

// unlock -force frees a lock a live pod holds, without asking: it says whom it
// took the lock from, another pod can take it at once, and the live pod's next
// Unlock is ErrLockLost.
func TestUnlockForceLivePod(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		live, other := tbl.pod(t), tbl.pod(t)
		lock := take(t, live, liveLock)
		holder, _ := heldBy(t, tbl, liveLock.Name)

		r := runCLI(t, "", tbl.args("unlock", liveLock.Name, "-force")...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, r.stderr, "no question with -force")
		assert.Regexp(t, `^unlocked "outboxPollJob": taken from `+regexp.QuoteMeta(holder)+
			`, which held it for \d+m\d+s more\n$`, r.stdout)

		by, held := heldBy(t, tbl, liveLock.Name)
		if tbl.keepsFree {
			assert.Equal(t, shedlock.ForceUnlockedBy, by)
		}
		assert.False(t, held)
		take(t, other, liveLock)
		require.ErrorIs(t, lock.Unlock(context.Background()), shedlock.ErrLockLost, "the live pod's Unlock")
		by, held = heldBy(t, tbl, liveLock.Name)
		assert.True(t, held && ownedBy(by, other), "the other pod keeps it: %s", by)
	})
}

// Without -force, unlock asks when the lock is held, naming the holder; yes
// frees it, anything else (or no answer) leaves it and fails.
func TestUnlockAsks(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		for _, tc := range []struct {
			answer string
			freed  bool
		}{
			{"y\n", true}, {"YES\n", true}, {"n\n", false}, {"\n", false}, {"", false}, {"yess\n", false},
		} {
			live := tbl.pod(t)
			lock := take(t, live, liveLock)
			holder, _ := heldBy(t, tbl, liveLock.Name)

			r := runCLI(t, tc.answer, tbl.args("unlock", liveLock.Name)...)
			assert.Contains(t, r.stderr, `Lock "outboxPollJob" is held by `+holder+" for ", "answer %q", tc.answer)
			assert.Contains(t, r.stderr, "Unlock it? [y/N] ")
			if tc.freed {
				require.Equal(t, 0, r.code, "answer %q: %s", tc.answer, r.stderr)
				assert.Contains(t, r.stdout, "taken from "+holder)
				require.ErrorIs(t, lock.Unlock(context.Background()), shedlock.ErrLockLost)
			} else {
				require.Equal(t, 1, r.code, "answer %q", tc.answer)
				assert.Empty(t, r.stdout)
				assert.Regexp(t, `\[y/N\] \n?shedlock unlock: not unlocked: the answer was not yes \(-force unlocks without asking\)\n$`, r.stderr)
				assert.Equal(t, tc.answer == "", strings.HasSuffix(r.stderr, "[y/N] \nshedlock unlock: not unlocked: the answer was not yes (-force unlocks without asking)\n"),
					"the end of input ends the question's line")
				_, held := heldBy(t, tbl, liveLock.Name)
				assert.True(t, held, "answer %q: still held", tc.answer)
				require.NoError(t, lock.Unlock(context.Background()), "answer %q: the pod still holds it", tc.answer)
			}
			// Free it for the next case: LockAtLeastFor would keep it.
			if _, held := heldBy(t, tbl, liveLock.Name); held || tbl.keepsFree {
				require.Equal(t, 0, runCLI(t, "", tbl.args("unlock", "-force", liveLock.Name)...).code)
			}
		}
	})
}

// A lock that is not held is left as it is, with or without -force: no
// question, the output says it was free, and the last holder's name stays. In
// Redis a lock that is not held has no key: that is an unknown name.
func TestUnlockNotHeld(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		p := tbl.pod(t)
		require.NoError(t, take(t, p, shedlock.LockConfig{Name: "cleanupJob", LockAtMostFor: time.Minute}).Unlock(context.Background()))
		last, _ := heldBy(t, tbl, "cleanupJob")
		for _, force := range []bool{false, true} {
			args := tbl.args("unlock", "cleanupJob")
			if force {
				args = append(args, "-force")
			}
			r := runCLI(t, "", args...)
			if !tbl.keepsFree {
				assert.Equal(t, 1, r.code)
				assert.Empty(t, r.stdout)
				assert.Equal(t, `shedlock unlock: no such lock: "cleanupJob" in env `+tbl.name+
					` (no key `+tbl.keyPrefix+`cleanupJob: nobody holds it)`+"\n", r.stderr)
				continue
			}
			require.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr, "-force %t: no question", force)
			assert.Regexp(t, `^lock "cleanupJob" is not held: nothing to unlock, nothing changed \(last holder `+
				regexp.QuoteMeta(p.LockedBy())+`\.\d+, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\)\n$`, r.stdout)
			by, held := heldBy(t, tbl, "cleanupJob")
			assert.False(t, held)
			assert.Equal(t, last, by, "-force %t: the last holder's name stays", force)
		}
	})
}

// An unknown name is a one-line error and exit status 1; nothing is created.
func TestUnlockUnknownName(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		r := runCLI(t, "y\n", tbl.args("unlock", "-force", "noSuchJob")...)
		assert.Equal(t, 1, r.code)
		assert.True(t, strings.HasPrefix(r.stderr, `shedlock unlock: no such lock: "noSuchJob" in `+tbl.where), r.stderr)
		assert.Empty(t, r.stdout)
		assert.Equal(t, "no locks in "+tbl.where+"\n", runCLI(t, "", tbl.args("list")...).stdout)
	})
}

// The question names the holder it is about: if the lock changes hands while
// the operator answers, nothing is freed.
func TestUnlockRefusesALockThatMovedWhileAsking(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		first := tbl.pod(t)
		take(t, first, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute})
		second := tbl.pod(t)
		var movedErr error
		answer := &answerAfter{do: func() {
			// The holder's lock is freed and taken by another pod meanwhile.
			tbl.free(t, "job")
			_, movedErr = second.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute})
		}}
		var out, errOut syncBuffer
		code := run(context.Background(), tbl.args("unlock", "job"), answer, &out, &errOut)
		require.NoError(t, movedErr)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut.String(), `not unlocked: lock "job" changed hands while you answered (now `+second.LockedBy())
		by, held := heldBy(t, tbl, "job")
		assert.True(t, held && ownedBy(by, second), "the second pod keeps it: %s", by)
	})
}

// answerAfter is a stdin that runs do, then answers yes.
type answerAfter struct {
	do   func()
	done bool
}

func (a *answerAfter) Read(p []byte) (int, error) {
	if !a.done {
		a.done = true
		a.do()
	}
	return copy(p, "y\n"), nil
}
