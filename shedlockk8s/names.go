package shedlockk8s

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Prefix is the prefix of the annotations and the label the provider writes,
// and of the Leases' names.
const Prefix = "shedlock-go.github.io/"

// The annotations and the label of a Lease the provider writes.
const (
	// AnnotationName is the lock's own name: a Lease's name is derived from it
	// (LeaseName) and cannot hold every name a lock may have.
	AnnotationName = Prefix + "name"
	// AnnotationAcquisition identifies the last acquisition, whose holder
	// wrote spec.holderIdentity as the same while it held the lock:
	// <owner>#<provider token>.<count>. It stays after a release, so that a
	// holder whose own write's answer was lost still knows the Lease.
	AnnotationAcquisition = Prefix + "acquisition"
	// AnnotationHold is how long, in milliseconds, the Lease stays held from
	// when a pod first sees this version of it (this resourceVersion): the
	// LockAtMostFor of the acquisition or extension that wrote it, what was
	// left of LockAtLeastFor when it was released, or 0 (free).
	AnnotationHold = Prefix + "hold-ms"
	// AnnotationLastFire is the fire time, in milliseconds since 1970, of the
	// last run of the lock that succeeded, for shedlock.CatchUp.
	AnnotationLastFire = Prefix + "last-fire-ms"
	// LabelEnv is the env of the provider that wrote the Lease (WithEnv).
	LabelEnv = Prefix + "env"
)

// leaseNamePrefix begins every Lease's name.
const leaseNamePrefix = "shedlock-"

// slugMax is the most characters of the lock's name a Lease's name keeps.
const slugMax = 30

// LeaseName returns the name of the Lease that keeps the lock named name in
// env: "shedlock-", the name in lowercase with every run of other characters
// than a-z and 0-9 made one '-' (at most 30 characters: for people reading
// it), then '-' and 12 hexadecimal digits of the SHA-256 of env and name
// (what tells names apart). It is a valid DNS-1123 label, of at most 52
// characters.
func LeaseName(env, name string) string {
	h := sha256.Sum256([]byte(env + "\x00" + name))
	var b strings.Builder
	b.WriteString(leaseNamePrefix)
	dash := false
	n := 0
	for _, r := range strings.ToLower(name) {
		if n == slugMax {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			n++
		} else if !dash && n > 0 {
			b.WriteByte('-')
			dash = true
			n++
		}
	}
	if !dash && n > 0 {
		b.WriteByte('-')
	}
	b.WriteString(hex.EncodeToString(h[:6]))
	return b.String()
}
