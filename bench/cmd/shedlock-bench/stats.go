package main

import (
	"slices"
	"time"
)

// latencies collects one pod's TryLock latencies; they are merged after a step,
// so the loop itself shares nothing.
type latencies []time.Duration

// quantile returns the q-quantile (0..1) of d, sorting it in place.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q * float64(len(d)-1))
	return d[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
