package shedlockredis

import "strings"

// PausedKey returns the key that holds the pause of the lock whose key is
// key, beside its fence key (FenceKey), in the same Cluster hash slot:
// "{" + key + "}:paused", or "{tag}:paused:" + key for a key with a hash tag
// of its own. Its value is the pause's end in milliseconds since 1970, "0"
// for a pause until Resume; a pause until a time has that time to live. ""
// where the key can have no fence key: such a name cannot be paused.
func PausedKey(key string) string { return besideKey(key, "paused") }

// RunsKey returns the hash that counts the run-now requests of the lock
// whose key is key, beside PausedKey: field n, the requests not yet run, and
// field done, the value of the acquisition that marked one run last. ""
// where the key can have no fence key.
func RunsKey(key string) string { return besideKey(key, "runs") }

// besideKey returns the key where what kind names ("fence", "fired",
// "released", "paused", "runs") is kept beside the lock keyed key, in the
// same Cluster hash slot: "{" + key + "}:" + kind, or "{tag}:" + kind + ":" +
// key for a key with a hash tag of its own. No lock key has either form:
// every one begins with KeyPrefix. A key with a "}" but no hash tag can have
// none: "".
func besideKey(key, kind string) string {
	if open, end, ok := hashTag(key); ok {
		return key[open:end+1] + ":" + kind + ":" + key
	}
	if strings.IndexByte(key, '}') >= 0 {
		return ""
	}
	return "{" + key + "}:" + kind
}

// besideLockKey returns the lock key that k is the key of kind beside, if it
// is one: the inverse of besideKey, checked by making k again.
func besideLockKey(k, kind string) (string, bool) {
	var key string
	if rest, ok := strings.CutSuffix(k, "}:"+kind); ok && strings.HasPrefix(rest, "{") {
		key = rest[1:]
	} else if i := strings.Index(k, "}:"+kind+":"); i > 0 {
		key = k[i+len("}:"+kind+":"):]
	}
	return key, key != "" && besideKey(key, kind) == k
}
