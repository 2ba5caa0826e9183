package integration_test

import (
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight providers, each with its own *sql.DB on one database file (as separate
// processes would have), compete for two names.
func TestSQLiteContention(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, sqliteStore(), shedlocktest.Contention{})
}

// Client-clock mode with clocks that agree (one process) keeps exclusion too.
func TestSQLiteContentionClientClock(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, sqliteStore(shedlock.WithClientClock(time.Now)), shedlocktest.Contention{RunsPerName: 100})
}
