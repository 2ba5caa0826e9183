package shedlockredis

// pauseScript writes a pause to the paused key KEYS[1]: its value is its
// end, ARGV[1], in milliseconds since 1970, "0" for a pause until Resume.
// SET drops a time to live an earlier pause gave the key, and PEXPIREAT
// gives a pause until a time its end by the server's clock (deleting the key
// at once if that has passed there). One script, so that no reader sees the
// value without its end, on any server since Redis 2.6.
const pauseScript = `
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[1] ~= '0' then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return 1
`

// runsField and runsDoneField are the fields of a RunsKey hash: the run-now
// requests not yet run, and the value of the acquisition that marked one
// run last.
const (
	runsField     = "n"
	runsDoneField = "done"
)

// runDoneScript marks one run-now request run (KEYS[2], the RunsKey) while
// the lock's key (KEYS[1]) holds the value of the acquisition that ran it
// (ARGV[1]): runDoneNotHeld when it does not, 0 when there is none left to
// mark or this acquisition marked one already (a RunDone sent again), 1 when
// it marked one. A released key kept for LockAtLeastFor holds the value
// marked released: no longer held. The hash stays at 0, with the marker, so
// that a RunDone sent again still finds it.
const runDoneScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('HGET', KEYS[2], '` + runsDoneField + `') == ARGV[1] then return 0 end
local v = redis.call('HGET', KEYS[2], '` + runsField + `')
local n = tonumber(v or '0')
if not n then return redis.error_reply('shedlock: ' .. KEYS[2] .. ' field ` + runsField + ` holds no count') end
if n <= 0 then return 0 end
redis.call('HSET', KEYS[2], '` + runsField + `', n - 1, '` + runsDoneField + `', ARGV[1])
return 1
`

// runDoneNotHeld is runDoneScript's answer when the lock is no longer held.
const runDoneNotHeld = -1

// readControlScript reads a name's lock and control in one step: the lock
// key's (KEYS[1]) value and PTTL, the paused key's (KEYS[2]) value, and the
// RunsKey's (KEYS[3]) pending count, each nil where absent; KEYS[2] and
// KEYS[3] may be missing, for a name that can have neither.
const readControlScript = `
local out = {false, false, false, false}
local v = redis.call('GET', KEYS[1])
if v then
  out[1] = v
  out[2] = redis.call('PTTL', KEYS[1])
end
if KEYS[2] then
  out[3] = redis.call('GET', KEYS[2])
  out[4] = redis.call('HGET', KEYS[3], '` + runsField + `')
end
return out
`
