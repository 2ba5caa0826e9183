package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// Once a Schedule entry is removed, its name may be registered again
// (Executor.Schedule's doc): and a name the store keeps in the same row,
// which the executor counts as the same name, may too, as "JOB" may after
// "job" is removed. The removed job has no entry left to block.
func TestRegistrationFreesRemovedScheduleCollationTwin(t *testing.T) {
	t.Parallel()
	p := mysqlStore(nil)(t)(t)
	ex := shedlock.NewExecutor(p)
	c := cron.New()
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	for _, pair := range [][2]string{{"job", "JOB"}, collationTwins[0], collationTwins[1]} {
		id, err := ex.Schedule(c, "@hourly", cfg(pair[0]), noopTask)
		require.NoError(t, err, "%q", pair[0])
		c.Remove(id)
		_, err = ex.Schedule(c, "@hourly", cfg(pair[1]), noopTask)
		assert.NoError(t, err, "%q after %q's entry was removed", pair[1], pair[0])
	}
}

func noopTask(context.Context) error { return nil }
