package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// PgBouncer starts a private pgbouncer in mode (privatedb.PoolTransaction or
// privatedb.PoolSession) with poolSize server connections in front of the
// PostgreSQL test server, stopped when t ends (its log kept in t's temporary
// directory). Without pgbouncer installed, t fails with the package to install:
// the topology tests are not optional.
func PgBouncer(t testing.TB, mode string, poolSize int) *privatedb.PgBouncer {
	t.Helper()
	upstream := PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := t.TempDir()
	b, err := privatedb.StartPgBouncer(ctx, logs, privatedb.PgBouncerConfig{Upstream: upstream, Mode: mode, PoolSize: poolSize})
	if err != nil {
		t.Fatalf("pgbouncer: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("pgbouncer: %v", err)
		}
	})
	return b
}
