package integration_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// openThroughProxy opens a one-connection pool of client c whose traffic
// passes a proxy that counts what the client sends. Each driver writes one
// round trip's messages at once, so a request the proxy counts is a round trip.
func openThroughProxy(t *testing.T, c pgClient) (*sql.DB, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(testdb.PostgresURL(t, c.params))
	require.NoError(t, err)
	px, err := faultproxy.Start(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.Close() })
	u.Host = px.Addr()
	db, err := sql.Open(c.driver, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	return db, px
}

// One round trip per acquisition, from a name's first, and one per release: no
// SELECT, PREPARE or BEGIN/COMMIT besides, counted on the wire of a
// one-connection pool. Under pgx's simple protocol no statement is prepared on
// the server; with lib/pq the provider prepares its three.
func TestPostgresRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c        pgClient
		prepared int // lock statements prepared on the connection
		fenced   bool
	}{
		{pgxClient, 2, false},       // pgx's statement cache: the two it ran
		{pgxSimpleClient, 0, false}, // none
		{libpqClient, 3, false},     // the provider's, on first use
		{pgxClient, 2, true},        // the same on a table with the fence column
		{pgxSimpleClient, 0, true},
		{libpqClient, 3, true},
	} {
		name := tc.c.name
		if tc.fenced {
			name += "/FencedTable"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := testdb.NewPostgresTable(t, admin)
			if tc.fenced {
				table = testdb.NewFencedPostgresTable(t, admin)
			}
			ctx := context.Background()
			// Another pod holds "held" from before the measured pool's first use:
			// pgx pings a connection idle for over a second before it hands it
			// out, and the other pod's own first use can take that long on a
			// busy machine, so it must not fall between two measured calls.
			other := newPostgresProvider(t, testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table))
			held, err := other.TryLock(ctx, shedlock.LockConfig{Name: "held", LockAtMostFor: time.Minute})
			require.NoError(t, err)
			db, px := openThroughProxy(t, tc.c)
			p := newPostgresProvider(t, db, shedlock.WithTableName(table))
			requests := func(f func()) int {
				before := px.Stats().Requests
				f()
				return px.Stats().Requests - before
			}
			cycle := func(name string) {
				l, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
				require.NoError(t, err)
				require.NoError(t, l.Unlock(ctx))
			}
			firstUse := requests(func() { cycle("warm-up") })
			t.Logf("first use of the provider, with its checks: %d round trips", firstUse)

			var l shedlock.Lock
			assert.Equal(t, 1, requests(func() {
				var err error
				l, err = p.TryLock(ctx, shedlock.LockConfig{Name: "new-name", LockAtMostFor: time.Minute})
				require.NoError(t, err)
			}), "first acquisition of a name")
			_, fenced := shedlock.FenceOf(l)
			assert.Equal(t, tc.fenced, fenced, "a fencing token")
			assert.Equal(t, 1, requests(func() { require.NoError(t, l.Unlock(ctx)) }), "release")

			assert.Equal(t, 1, requests(func() {
				_, err := p.TryLock(ctx, shedlock.LockConfig{Name: "held", LockAtMostFor: time.Minute})
				require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			}), "first attempt on a name another pod holds")
			require.NoError(t, held.Unlock(ctx))

			const n = 20
			assert.Equal(t, 2*n, requests(func() {
				for range n {
					cycle("job")
				}
			}), "%d lock+unlock cycles", n)

			var prepared int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_prepared_statements WHERE strpos(statement, $1) > 0",
				table).Scan(&prepared))
			assert.Equal(t, tc.prepared, prepared, "lock statements prepared on the connection")
		})
	}
}
