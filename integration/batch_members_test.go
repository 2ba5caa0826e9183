package integration_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// collationTwins are names that MariaDB's default collation
// (utf8mb4_general_ci) keeps in one row, and that the executor's own rule
// (case, Latin accents, trailing spaces) does not take as one name.
var collationTwins = [][2]string{
	{"отчёт", "отчет"},
	{"ß-job", "s-job"},
	{"ı-job", "i-job"},
}

// Of two names of one batch that the name column's collation makes one row,
// only the later fails, with its own error naming both; the first and the
// batch's other names are taken, at every tick, not only the first.
func TestBatchCollationTwinFailsOnlyItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := mysqlStore(nil)(t)(t).(shedlock.BatchLocker)
	var cfgs []shedlock.LockConfig
	for _, pair := range collationTwins {
		cfgs = append(cfgs, batchOf(pair[0], "other-"+pair[0], pair[1])...)
	}
	for tick := range 2 {
		res, err := p.TryLockBatch(ctx, cfgs)
		require.NoError(t, err, "tick %d: one member's twin failed the batch", tick)
		for i, pair := range collationTwins {
			first, other, twin := res[3*i], res[3*i+1], res[3*i+2]
			require.NoError(t, first.Err, "tick %d: %q", tick, pair[0])
			require.NoError(t, other.Err, "tick %d: a name beside the twins", tick)
			assert.ErrorIs(t, twin.Err, shedlock.ErrDuplicateName, "tick %d: %q", tick, pair[1])
			assert.ErrorIs(t, twin.Err, shedlock.ErrInvalidConfig, "tick %d: %q", tick, pair[1])
			assert.ErrorContains(t, twin.Err, fmt.Sprintf("%q is the same row as lock %q", pair[1], pair[0]))
			assert.Nil(t, twin.Lock)
			require.NoError(t, first.Lock.Unlock(ctx))
			require.NoError(t, other.Lock.Unlock(ctx))
		}
	}
}
