package shedlockredis

// Scripts are the Lua scripts a Provider sends, as text. They are for tools
// that must send the library's very scripts without taking locks through a
// Provider: a benchmark's floor, a load generator. Their texts and arguments
// may change from one version to the next: read them from here, never copy
// them.
type Scripts struct {
	// Acquire takes one lock and its fencing token: KEYS the lock's key, its
	// fence key (FenceKey) and, optionally, its paused key (PausedKey), ARGV
	// the value and the PX in milliseconds; -1 while the paused key exists,
	// nil when the lock's key exists, else the token.
	Acquire string
	// BatchAcquire takes many locks of one Cluster hash slot (Provider.TryLockBatch).
	BatchAcquire string
	// Release frees a lock while the key holds the value: KEYS the lock's key
	// and, optionally, its released key, where it records the release; ARGV
	// the value, the milliseconds of LockAtLeastFor left when the time to live
	// was set, and that time to live; 1 if it was ours, else 0.
	Release string
	// Extend sets a new time to live while the key holds the value.
	Extend string
}

// LuaScripts returns the scripts this version of the package sends.
func LuaScripts() Scripts {
	return Scripts{Acquire: acquireScript, BatchAcquire: batchAcquireScript, Release: releaseScript, Extend: extendScript}
}
