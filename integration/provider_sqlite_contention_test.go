package integration_test

import (
	"testing"

	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight providers, each with its own *sql.DB on one database file (as separate
// processes would have), compete for two names.
func TestSQLiteContention(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, sqliteStore(), shedlocktest.Contention{})
}
