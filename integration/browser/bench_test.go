package browser

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockhttp"
)

// BenchmarkPageSQLiteTenThousandLocks: the dashboard's page, and the part
// its script fetches each refresh, on a SQLite table of 10,000 locks, a
// third of them held: the store's SELECT of every row included.
func BenchmarkPageSQLiteTenThousandLocks(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "locks.db")+"?"+shedlock.SQLiteDSNParams)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	p, err := shedlock.NewSQLiteProvider(db)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.EnsureTable(ctx); err != nil {
		b.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		_, err := tx.ExecContext(ctx, `INSERT INTO shedlock (name, lock_until, locked_at, locked_by)
			VALUES (?, strftime('%Y-%m-%d %H:%M:%f', 'now', ?), strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)`,
			fmt.Sprintf("tenant-%05d.nightlyReport", i), fmt.Sprintf("%+d seconds", (i%3-1)*600),
			fmt.Sprintf("pod-%d#3f9c2b1e7d4a6058.%d", i%7, i))
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	h := shedlockhttp.NewHandler(p)
	for _, path := range []string{"/", "/live"} {
		b.Run(strings.TrimPrefix(path, "/")+"page", func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
				if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, "<b>10000</b> locks") ||
					!strings.Contains(body, "<b>3333</b> held") {
					b.Fatalf("%d: %.300s", w.Code, w.Body.String())
				}
			}
		})
	}
}
