package bench_test

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// BenchmarkMySQLKeepAliveCost measures what keep-alive costs a running job: one
// task runs for six of its LockAtMostFor while a proxy counts the requests its
// provider's pool sends to MySQL. It reports extensions and round trips per
// minute of running, for a 500ms and a 2s lock (keep-alive extends every third
// of LockAtMostFor: 360 per minute for 500ms, 90 for 2s, 0.6 for 5m).
func BenchmarkMySQLKeepAliveCost(b *testing.B) {
	for _, most := range []time.Duration{500 * time.Millisecond, 2 * time.Second} {
		b.Run(most.String(), func(b *testing.B) {
			db := testdb.Open(b, nil)
			table := testdb.NewTable(b, db)
			cfg, err := mysql.ParseDSN(testdb.MySQLDSN(b))
			if err != nil {
				b.Fatal(err)
			}
			px, err := faultproxy.Start(cfg.Addr)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = px.Close() })
			cfg.Addr = px.Addr()
			pool, err := sql.Open("mysql", cfg.FormatDSN())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = pool.Close() })
			p, err := shedlock.NewMySQLProvider(pool, shedlock.WithTableName(table))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Close() })
			var extends atomic.Int64
			ex := shedlock.NewExecutor(p, shedlock.WithKeepAlive(),
				shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)),
				shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
					if ev.Kind == shedlock.EventExtended {
						extends.Add(1)
					}
				})))
			b.Cleanup(func() { _ = ex.Stop(context.Background()) })
			lockCfg := shedlock.LockConfig{Name: "kept", LockAtMostFor: most}
			runFor := 6 * most

			var ran time.Duration
			var requests int
			for b.Loop() {
				var before int
				_, err := ex.Run(context.Background(), lockCfg, func(ctx context.Context) error {
					before = px.Stats().Requests // the acquisition has been sent
					start := time.Now()
					select {
					case <-ctx.Done():
						return context.Cause(ctx)
					case <-time.After(runFor):
					}
					ran += time.Since(start)
					requests += px.Stats().Requests - before
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if err := ex.Stop(context.Background()); err != nil { // the listener has every event
				b.Fatal(err)
			}
			perMin := float64(time.Minute) / float64(ran)
			b.ReportMetric(float64(extends.Load())*perMin, "extends/min")
			b.ReportMetric(float64(requests)*perMin, "round-trips/min")
		})
	}
}
