package shedlockredis

import "time"

// SetValueClock replaces the clock whose time p writes into lock values, to show
// that nothing else depends on the client's clock.
func SetValueClock(p *Provider, now func() time.Time) { p.now = now }

// Slot is the Cluster hash slot the provider groups a batch's keys by.
var Slot = slot

// ReleasedMark ends the value of a key kept for LockAtLeastFor after its release.
const ReleasedMark = releasedMark

// ReleasedKey is where a release records the value it released.
var ReleasedKey = releasedKey
