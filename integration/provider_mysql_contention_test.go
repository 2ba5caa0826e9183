package integration_test

import (
	"testing"

	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight providers, each with its own pool and owner, compete for two names.
func TestMySQLContention(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, mysqlStore(nil), shedlocktest.Contention{})
}

// The same, with the providers' sessions in different time zones: a zone must
// not make a held lock look expired to another pod.
func TestMySQLContentionMixedTimeZones(t *testing.T) {
	t.Parallel()
	shedlocktest.RunContention(t, mysqlStore(testZones(t)), shedlocktest.Contention{RunsPerName: 100})
}
