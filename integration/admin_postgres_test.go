package integration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// postgresAdminTable is a fresh table of ddl ("" for Java ShedLock's) whose
// pods are providers of client c.
func postgresAdminTable(c pgClient, ddl string) func(t *testing.T) adminTable {
	return func(t *testing.T) adminTable {
		db := testdb.OpenPostgres(t, testdb.PGX, map[string]string{"TimeZone": "UTC"})
		table := testdb.NewPostgresTable(t, db)
		if ddl != "" {
			table = customTable(t, db, ddl)
		}
		return adminTable{
			pod: func(t *testing.T) adminProvider {
				return newPostgresProvider(t, c.open(t, nil), shedlock.WithTableName(table))
			},
			exec: func(t *testing.T, stmt string) {
				_, err := db.Exec(strings.ReplaceAll(stmt, "{t}", table))
				require.NoError(t, err)
			},
		}
	}
}

// Held and TimeLeft are the database's view whatever the session's TimeZone,
// on Java ShedLock's timestamp columns and on timestamptz ones.
func TestAdminPostgresTimeZones(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"timestamp":   "",
		"timestamptz": postgresDDL("varchar(64)", "timestamptz", "timestamptz", "varchar(255)"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := testdb.NewPostgresTable(t, db)
			if ddl != "" {
				table = customTable(t, db, ddl)
			}
			ctx := context.Background()
			pod := newPostgresProvider(t, pgxClient.open(t, map[string]string{"TimeZone": "America/New_York"}), shedlock.WithTableName(table))
			before := time.Now().UTC().Add(-2 * time.Second)
			_, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute})
			require.NoError(t, err)
			var infos []shedlock.LockInfo
			for _, zone := range pgTestZones {
				admin := newPostgresProvider(t, pgxClient.open(t, map[string]string{"TimeZone": zone}), shedlock.WithTableName(table))
				info, err := admin.Inspect(ctx, "job")
				require.NoError(t, err, zone)
				assert.True(t, info.Held, zone)
				// No more than asked, and no less than asked less the time since it
				// was asked (a zone misread would be off by hours).
				assert.LessOrEqual(t, info.TimeLeft, 10*time.Minute+time.Second, zone)
				assert.GreaterOrEqual(t, info.TimeLeft, 10*time.Minute-time.Since(before), zone)
				assert.True(t, info.LockedAt.After(before) && info.LockedAt.Before(time.Now().Add(2*time.Second)),
					"%s: locked_at %v is now, in UTC", zone, info.LockedAt)
				infos = append(infos, info)
			}
			for _, info := range infos[1:] {
				assert.Equal(t, infos[0].LockedAt, info.LockedAt)
				assert.Equal(t, infos[0].LockUntil, info.LockUntil)
			}
		})
	}
}

// Under a nondeterministic collation a name is still matched exactly: "JOB"
// does not find or free the row "job".
func TestAdminPostgresNameIsExact(t *testing.T) {
	t.Parallel()
	createCaseInsensitiveCollation(t)
	tbl := postgresAdminTable(pgxClient, postgresDDL("varchar(64) COLLATE "+pgCaseInsensitive, "timestamp", "timestamp", "varchar(255)"))(t)
	ctx := context.Background()
	admin, pod := tbl.pod(t), tbl.pod(t)
	_, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	_, err = admin.ForceUnlock(ctx, "JOB")
	require.ErrorIs(t, err, shedlock.ErrLockNotFound)
	info, err := admin.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.True(t, info.Held)
}

// A read-only session fails the health check.
func TestAdminPostgresHealthCheckReadOnly(t *testing.T) {
	t.Parallel()
	db := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewPostgresTable(t, db)
	ro := newPostgresProvider(t, pgxClient.open(t, map[string]string{"default_transaction_read_only": "on"}), shedlock.WithTableName(table))
	err := ro.HealthCheck(context.Background())
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "read-only")
}
