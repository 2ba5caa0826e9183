package integration_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight providers, each with its own *sql.DB on one database file (as separate
// processes would have), compete for two names. SQLite's busy handler is not
// fair: with eight writers polling, and commits that wait on fsync while the
// rest of the suite writes too, one writer waited past SQLiteDSNParams' 5 s
// and its attempt failed with SQLITE_BUSY. A store error is not what this
// test is about, so its writers wait up to a minute. Each run commits to the
// file several times, waiting on fsync: 100 runs a name, as the PostgreSQL
// contention tests do, are half the wait of the default 200, and two holders
// at once would show in the first few of them.
func TestSQLiteContention(t *testing.T) {
	t.Parallel()
	params := strings.Replace(shedlock.SQLiteDSNParams, "busy_timeout(5000)", "busy_timeout(60000)", 1)
	require.NotEqual(t, shedlock.SQLiteDSNParams, params)
	shedlocktest.RunContention(t, sqliteStoreWith(params), shedlocktest.Contention{RunsPerName: 100})
}
