package shedlockredis_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock/shedlockredis"
)

// A benchmark's floor sends the provider's own acquire and release scripts
// directly, so that it measures the same server work without the library; a
// copy would drift from what the provider sends.
func ExampleLuaScripts() {
	scripts := shedlockredis.LuaScripts()
	acquire := redis.NewScript(scripts.Acquire)
	release := redis.NewScript(scripts.Release)
	// acquire.Run(ctx, client, []string{key, shedlockredis.FenceKey(key)}, value, px) ...
	fmt.Println(len(acquire.Hash()), len(release.Hash()))
	// Output: 40 40
}
