// Package lockend holds the one margin by which a holder counts its lock as
// ended before the store does, so that the executor, the Leader and the
// stores' own CheckHeld agree on it.
package lockend

import "time"

// Margin is how much sooner than LockAtMostFor mostFor after the acquiring
// statement was sent a holder takes its lock to end: a tenth of it, at most
// 5 s, so that the holder can stop before another instance may take the lock,
// and at least 2 ms, since stores count the end from their own now kept to the
// millisecond and cut down to it (MySQL's UTC_TIMESTAMP(3)), so the store's
// end can come a little before the one counted from sent.
func Margin(mostFor time.Duration) time.Duration {
	return max(min(mostFor/10, 5*time.Second), 2*time.Millisecond)
}

// At is when a lock whose LockAtMostFor mostFor was asked for at sent ends
// for its holder: Margin before the store's end. The store computed its end
// from a later now, so an end counted from sent is never past it.
func At(sent time.Time, mostFor time.Duration) time.Time {
	return sent.Add(mostFor - Margin(mostFor))
}
