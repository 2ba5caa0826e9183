package kvstore

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// ValuePrefix begins every lock value the stores and Java ShedLock write:
// ADDED:<time>@<holder>.
const ValuePrefix = "ADDED:"

// ValueTime is the layout of the time in a value, Java's toIsoString.
const ValueTime = "2006-01-02T15:04:05.000Z"

// Owner is what one provider writes into its lock values: Java ShedLock's
// form ADDED:<time>@<holder>, the holder being the owner (WithLockedBy, else
// the host name), this provider's random token and a count of its
// acquisitions. No two acquisitions, of this provider or of another given
// the same owner, write the same value: a value tells an acquisition from
// every other. The time is the writer's, for people reading the keys: no
// store compares it.
type Owner struct {
	lockedBy string
	suffix   string // @<lockedBy><sep><token><end>
	seq      atomic.Uint64
}

// NewOwner returns the owner of a provider whose owner is lockedBy ("" for
// the host name); sep goes between the owner and the token, end between the
// token and the count, as each store has always written them.
func NewOwner(lockedBy string, sep, end byte) *Owner {
	if lockedBy == "" {
		lockedBy = HostName()
	}
	var token [6]byte
	_, _ = rand.Read(token[:]) // crypto/rand.Read never fails on supported platforms
	return &Owner{lockedBy: lockedBy, suffix: "@" + lockedBy + string(sep) + hex.EncodeToString(token[:]) + string(end)}
}

// HostName is the default owner, as Java ShedLock writes it.
func HostName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown-host"
	}
	return host
}

// LockedBy returns the owner.
func (o *Owner) LockedBy() string { return o.lockedBy }

// AppendValue appends a new acquisition's value, written at now, to b.
func (o *Owner) AppendValue(b []byte, now time.Time) []byte {
	b = append(b, ValuePrefix...)
	b = now.UTC().AppendFormat(b, ValueTime)
	b = append(b, o.suffix...)
	return strconv.AppendUint(b, o.seq.Add(1), 36)
}

// Value returns a new acquisition's value, written at now.
func (o *Owner) Value(now time.Time) string {
	var buf [160]byte
	return string(o.AppendValue(buf[:0], now))
}

// ParseValue reads a value of the form ADDED:<time>@<holder>, as Java
// ShedLock and the stores write it: when it was written and by whom. ok is
// false for a value of another form.
func ParseValue(value string) (at time.Time, by string, ok bool) {
	rest, ok := strings.CutPrefix(value, ValuePrefix)
	if !ok {
		return time.Time{}, "", false
	}
	at0, by, ok := strings.Cut(rest, "@")
	if !ok {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, at0)
	if err != nil {
		return time.Time{}, "", false
	}
	return t.UTC(), by, true
}
