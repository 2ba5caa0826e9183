package shedlockredis

// forceUnlockScript deletes a lock's key (KEYS[1]) if it holds ARGV[1], or
// whatever it holds when ARGV[1] is empty, and returns {1, value, PTTL} of
// what it deleted, {2, value, PTTL} of what it found instead, or {0} when
// there is no key. The compare and the delete are one step, so an acquisition
// made meanwhile by another holder is never freed. The fence key stays: the
// next holder's token is still larger than the last one given.
const forceUnlockScript = `
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
local pttl = redis.call('PTTL', KEYS[1])
if ARGV[1] ~= '' and v ~= ARGV[1] then return {2, v, pttl} end
redis.call('DEL', KEYS[1])
return {1, v, pttl}
`
