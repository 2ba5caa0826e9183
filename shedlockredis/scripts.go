package shedlockredis

// acquireScript takes a lock and gives it a fencing token in one round trip.
// It sets the lock's key (KEYS[1]) to this acquisition's value (ARGV[1]) with
// a time to live of ARGV[2] milliseconds only if the key does not exist, as
// Java ShedLock's SET NX PX does, and returns nil when it exists. Once the
// lock is taken, it writes the token to the lock's fence key (KEYS[2]) and
// returns it: the larger of the last token + 1 and the server's clock in
// microseconds since 1970. The first keeps tokens increasing when the clock
// steps back, the second when the fence key was lost with the lock's (a
// FLUSHALL, a failover that lost the write). Java ShedLock pods neither read
// nor write the fence key.
//
// A write after TIME needs effects replication, the default since Redis 5:
// replicate_commands, before any write, asks for it on older servers. Lua numbers are doubles,
// exact to 2^53; a token is about 2^51 until the year 2041 and is written with
// %.0f, never in the exponent form Lua's tostring would give it.
//
// A name paused by an operator (Provider.Pause) is refused before anything
// is read or written: while its paused key (KEYS[3], see PausedKey) exists,
// the script returns pausedReply. Without KEYS[3] (a caller of LuaScripts
// that sends two keys) it checks no pause.
const acquireScript = effectsReplication + pausedCheck3 + acquireTake

// pausedReply is what the acquiring scripts return for a paused name: no
// fencing token is negative.
const pausedReply = -1

// pausedCheck3 and pausedCheck4 end an acquiring script with pausedReply
// while the paused key, KEYS[3] or KEYS[4], exists: Redis deletes a pause
// until a time at its end by the server's clock.
const (
	pausedCheck3 = "if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return -1 end\n"
	pausedCheck4 = "if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then return -1 end\n"
)

// effectsReplication opens a script that writes after TIME.
const effectsReplication = `
if redis.replicate_commands then redis.replicate_commands() end
`

// acquireTake is acquireScript after its opening line: SET NX PX, then the
// fencing token. fireAcquireScript sends it after its own check.
//
// A fence key that holds no token (written by hand: not a number, or not a
// string) is this lock's error: the key it just set is deleted before the
// error is returned, so that no lock is left held with nobody told. Redis
// keeps a script's writes before an error, so the check cannot come after
// them.
const acquireTake = lastFence + `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local last = lastFence(KEYS[2])
if not last then
  redis.call('DEL', KEYS[1])
  return redis.error_reply(noFence(KEYS[2]))
end
local t = redis.call('TIME')
local fence = last + 1
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if fence < now then fence = now end
redis.call('SET', KEYS[2], string.format('%.0f', fence))
return fence
`

// lastFence defines the scripts' lastFence(key): the last fencing token the
// fence key holds, 0 when there is none, or nil when it holds no token: not a
// number a double holds exactly, or a value that is not a string (GET's
// WRONGTYPE, caught rather than ending the script). noFence(key) is the
// message for such a key.
const lastFence = `local function lastFence(key)
  local v = redis.pcall('GET', key)
  if v == false then return 0 end
  local n = type(v) == 'string' and tonumber(v)
  if n and n > -9007199254740992 and n < 9007199254740992 then return n end
  return nil
end
local function noFence(key)
  return 'shedlock: fence key ' .. key .. ' holds no fencing token (not a number, or not a string): ' ..
    'delete it, or set it to the last token'
end
`

// releaseScript releases a lock while the key still holds this acquisition's
// value (ARGV[1]); 1 if it did, 0 if the lock was no longer ours.
//
// The same release sent again, as go-redis does when a connection drops
// before the answer, or as the caller does after an error, must find its own
// work done and return 1. A key it keeps for LockAtLeastFor it marks released
// (the value followed by releasedMark), so that it also does not shorten the
// hold a second time: the time to live it set is no longer one from which to
// count how long the lock was held. Either way it records the value in the
// lock's released key (KEYS[2], see releasedKey; none for a name that can have
// no fence key) for a minute (releasedForMs): once the key is gone, deleted
// or its kept time run out, its absence alone cannot tell a release from a
// forced unlock or a time to live run out, which stay 0. The released key
// answers 1 even when another holder has taken the lock since, and that
// holder's key is left alone.
//
// It keeps the lock until LockAtLeastFor after it was taken, measured by the
// server's clock: the client tracks how long the lock had been held when its
// time to live was last set (by SET or an Extend), never more than it had
// (from the key's PTTL, bounded by this process's monotonic clock where a
// replay may have distorted it, see lock.Extend), and sends LockAtLeastFor less that (ARGV[2]) with the
// time to live it set then (ARGV[3]). ARGV[3] - PTTL is the time since, so
// what is left to keep is ARGV[2] - (ARGV[3] - PTTL). No instant from the
// client's clock is used, so a skewed or jumping client clock cannot shorten
// the hold.
//
// A key without a time to live (PTTL -1, someone ran PERSIST) keeps ARGV[2]:
// longer than needed rather than shorter. ARGV[3] is the least time to live
// the key may have been given last (less than the last one sent when an
// Extend's answer was lost), and a PTTL above it counts as no time held since:
// the lock is then kept longer than needed rather than shorter.
const releaseScript = releaseOurs + releaseKeep

// releasedMark ends the value of a key released but kept for LockAtLeastFor.
// No acquisition's value ends so: each ends with its number (see keyValue),
// and Java ShedLock's with a host name, which has no '|'.
const releasedMark = "|released"

// releaseOurs opens a release: nothing unless the lock is this acquisition's,
// and 1 at once when this release has already run.
const releaseOurs = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] .. '` + releasedMark + `' then return 1 end
if v ~= ARGV[1] then
  if KEYS[2] and redis.call('GET', KEYS[2]) == ARGV[1] then return 1 end
  return 0
end
`

// releaseKeep is the rest of releaseScript: keep what is left of
// LockAtLeastFor, marked released, or delete the key. fireReleaseScript sends
// it after its record.
const releaseKeep = `local keep = tonumber(ARGV[2])
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= 0 then keep = keep - math.max(tonumber(ARGV[3]) - pttl, 0) end
if keep > 0 then
  redis.call('SET', KEYS[1], ARGV[1] .. '` + releasedMark + `', 'XX', 'PX', keep)
else
  redis.call('DEL', KEYS[1])
end
if KEYS[2] then redis.call('SET', KEYS[2], ARGV[1], 'PX', ` + releasedForMs + `) end
return 1
`

// releasedForMs is how long, in milliseconds, a released key remembers the
// release of a lock: a minute, longer than go-redis takes to
// send a command again after a dropped connection (its retries and backoff,
// a few seconds with its defaults), and than a caller takes to retry an
// Unlock that returned an error. A release sent again later finds the lock
// lost, as one sent after a forced unlock does.
const releasedForMs = "60000"

// extendScript sets the key's time to live to ARGV[2] milliseconds while it
// still holds this acquisition's value (ARGV[1]). It returns the time to live
// the key had before (PTTL: >= 0, or -1 for none), which tells the client how
// long the lock had been held; -3 when the lock was no longer ours.
const extendScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -3 end
local pttl = redis.call('PTTL', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return pttl
`

// extendNotOurs is what extendScript returns when the value is not ours.
const extendNotOurs = -3

// batchAcquireScript is acquireScript for many locks at once, all in one
// Cluster hash slot: for each lock, in the order given, the same SET NX PX and,
// once it is taken, the same fencing token. The keys are all in KEYS, as
// Cluster routing and script replication need: per lock its key and, when
// ARGV says it has them, its fence key and its paused key. ARGV holds three
// values per lock: the acquisition's value, the time to live in milliseconds,
// and "2" when a fence key and a paused key follow the lock's key in KEYS,
// "1" when only a fence key does, else "0" (see FenceKey and PausedKey). It
// returns one element per lock: pausedReply while its paused key exists
// (nothing of it is written), nil when the key exists, else the token (0 for
// a lock that has no fence key). TIME is read once, at the first acquisition: each lock's
// token is still the larger of its own last token + 1 and the clock.
//
// A fence key that holds no token is that lock's own outcome, as in
// acquireScript: its key is deleted again and its element is an error reply;
// the locks after it are taken as any other.
//
// A false in the returned table reaches the client as nil, as acquireScript's
// lone false does; a nil would end the table there.
const batchAcquireScript = `
if redis.replicate_commands then redis.replicate_commands() end
` + lastFence + `local out, k, now = {}, 1, nil
for i = 1, #ARGV, 3 do
  local key, fenceKey, pausedKey = KEYS[k], nil, nil
  k = k + 1
  if ARGV[i + 2] ~= '0' then
    fenceKey = KEYS[k]
    k = k + 1
  end
  if ARGV[i + 2] == '2' then
    pausedKey = KEYS[k]
    k = k + 1
  end
  local got = false
  if pausedKey and redis.call('EXISTS', pausedKey) == 1 then
    got = -1
  elseif redis.call('SET', key, ARGV[i], 'NX', 'PX', ARGV[i + 1]) then
    got = 0
    if fenceKey then
      local last = lastFence(fenceKey)
      if last then
        if not now then
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        end
        local fence = last + 1
        if fence < now then fence = now end
        redis.call('SET', fenceKey, string.format('%.0f', fence))
        got = fence
      else
        redis.call('DEL', key)
        got = redis.error_reply(noFence(fenceKey))
      end
    end
  end
  out[#out + 1] = got
end
return out
`

// fireAcquireScript is acquireScript for a CatchUp run of fire time ARGV[3]
// (milliseconds since 1970): it takes the lock only if the fire time recorded
// in the lock's fired key (KEYS[3], see FiredKey) is older, or there is none,
// so that a fire time that succeeded is never taken again. Java ShedLock pods
// neither read nor write the fired key. A paused name (KEYS[4], its paused
// key) is refused first, with pausedReply.
const fireAcquireScript = effectsReplication + pausedCheck4 + `local last = redis.call('GET', KEYS[3])
if last and tonumber(last) >= tonumber(ARGV[3]) then return false end
` + acquireTake

// fireReleaseScript is releaseScript for a CatchUp run that succeeded: while
// the key still holds this acquisition's value, it also records the run's fire
// time (ARGV[4]) in the fired key (KEYS[3]), unless a later one is recorded.
// KEYS[2] is the released key, as releaseScript's.
const fireReleaseScript = releaseOurs + `local last = redis.call('GET', KEYS[3])
if not last or tonumber(last) < tonumber(ARGV[4]) then redis.call('SET', KEYS[3], ARGV[4]) end
` + releaseKeep
