package shedlockredis

// releasedKey returns the key where a release that deleted the lock keyed
// key records the value it released (see releaseScript), beside its fence key
// (FenceKey), in the same Cluster hash slot: "{" + key + "}:released", or
// "{tag}:released:" + key for a key with a hash tag of its own. "" where the
// key can have no fence key: a release of such a lock sent twice reports the
// lock lost.
func releasedKey(key string) string { return besideKey(key, "released") }
