package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Redis store reads shedlockredis's and Java ShedLock's keys of its -env
// alone: a Java value names its host, a key without a time to live is held
// with no end, a value of another form is shown whole, and an env whose name is
// a glob pattern matches only itself.
func TestRedisKeys(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	env := uniqueName("glob*?[x]_")
	other := uniqueName("other_")
	set := func(key, value string, ttl time.Duration) {
		require.NoError(t, client.Set(ctx, key, value, ttl).Err())
		t.Cleanup(func() { _ = client.Del(ctx, key).Err() })
	}
	set("job-lock:"+env+":javaJob", "ADDED:2026-11-30T05:51:02.49Z@java-host-1", time.Minute)
	set("job-lock:"+env+":persisted", "ADDED:2026-11-30T05:51:02.490Z@pod:abc-1", 0)
	set("job-lock:"+env+":odd", "something else", time.Minute)
	set("job-lock:"+other+":javaJob", "ADDED:2026-11-30T05:51:02.490Z@elsewhere", time.Minute)
	set("job-lock:globx?[x]_:javaJob", "ADDED:2026-11-30T05:51:02.490Z@elsewhere", time.Minute)

	r := runCLI(t, "", "list", "-json", "-dsn", url, "-env", env)
	require.Equal(t, 0, r.code, r.stderr)
	var got []lockJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	require.Len(t, got, 3, r.stdout)
	byName := map[string]lockJSON{}
	for _, l := range got {
		byName[l.Name] = l
	}
	java := byName["javaJob"]
	assert.Equal(t, "java-host-1", java.LockedBy)
	assert.True(t, java.Held)
	require.NotNil(t, java.LockedAt)
	assert.Equal(t, time.Date(2026, 11, 30, 5, 51, 2, 490e6, time.UTC), *java.LockedAt)
	assert.InDelta(t, 60_000, java.TimeLeftMS, 5_000)

	persisted := byName["persisted"]
	assert.True(t, persisted.Held)
	assert.EqualValues(t, -1, persisted.TimeLeftMS)
	assert.Nil(t, persisted.LockUntil)
	assert.Equal(t, "pod:abc-1", persisted.LockedBy)

	odd := byName["odd"]
	assert.Equal(t, "something else", odd.LockedBy)
	assert.Nil(t, odd.LockedAt)

	r = runCLI(t, "", "list", "-dsn", url, "-env", env)
	require.Equal(t, 0, r.code, r.stderr)
	rows := parseTable(t, r.stdout)
	require.Len(t, rows, 3)
	assert.Equal(t, "persisted", rows[2]["NAME"])
	assert.Equal(t, "no expiry", rows[2]["TIME LEFT"])
	assert.Equal(t, "-", rows[2]["LOCK UNTIL (UTC)"])

	// -force frees whatever the key holds; the other env keeps its lock.
	r = runCLI(t, "", "unlock", "-force", "-dsn", url, "-env", env, "persisted")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "unlocked \"persisted\": taken from pod:abc-1, which held it with no expiry\n", r.stdout)
	n, err := client.Exists(ctx, "job-lock:"+env+":persisted", "job-lock:"+other+":javaJob").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
}
