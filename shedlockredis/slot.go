package shedlockredis

import "strings"

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// slot returns the Cluster hash slot of key, as the server computes it:
// CRC16 (XMODEM) of the key's hash tag, the part between its first "{" and
// the first "}" after it when that part is not empty, else of the whole key.
// go-redis keeps its own in an internal package, out of reach.
func slot(key string) int {
	if open, end, ok := hashTag(key); ok {
		key = key[open+1 : end]
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// hashTag finds key's hash tag: the part between its first "{" and the
// first "}" after it, when that part is not empty; open and end are the
// indexes of those braces.
func hashTag(key string) (open, end int, ok bool) {
	open = strings.IndexByte(key, '{')
	if open < 0 {
		return 0, 0, false
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 {
		return 0, 0, false
	}
	return open, open + 1 + n, true
}
