// Package sqlite is the SQLite dialect of the SQL lock store: its statements,
// its first-use checks of the table, and its row scan. The root package's
// SQLiteProvider is an engine on this Store.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// caps: INSERT OR IGNORE makes the row, a conditional UPDATE takes it; TEXT
// times hold any date; admin times are milliseconds.
var caps = sqlstore.Caps{TimeUnit: time.Millisecond}

// Statement indexes in the prepared statements.
const (
	stmtInsert = iota
	stmtUpdate
	stmtRelease
	stmtExtend
	stmtBatch
)

// Store runs the SQLite statements on one table. SQLite counts every row an
// UPDATE's WHERE matched as changed, even when the values stay the same, so a 0
// from RowsAffected always means "not ours".
type Store struct {
	db        *sql.DB
	table     string // quoted
	tableName string
	log       *slog.Logger
	setup     *sqlstore.Gate[prepared]
}

// prepared is what the first use finds and prepares.
type prepared struct {
	stmts sqlstore.Prepared // by stmtInsert, stmtUpdate, stmtRelease, stmtExtend, stmtBatch
	fence bool              // the table has the fence column: Insert and Update return it
	batch bool              // SQLite has RETURNING: stmtBatch is prepared
	fire  sqlstore.Prepared // CatchUp's statements (see fireTexts); nil without the last_success column
}

// New returns the store of table on db; log takes the warning about a pool not
// set up for several processes. It touches no database.
func New(db *sql.DB, table string, log *slog.Logger) (*Store, error) {
	if err := sqlstore.CheckDriver("NewSQLiteProvider", "SQLite", db); err != nil {
		return nil, err
	}
	quoted, err := sqlstore.QuoteTable(table, '"')
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, table: quoted, tableName: table, log: log}
	s.setup = sqlstore.NewGate(s.prepare)
	return s, nil
}

// Caps describes the SQLite statements.
func (s *Store) Caps() sqlstore.Caps { return caps }

// Table is the table as WithTableName gave it.
func (s *Store) Table() string { return s.tableName }

// prepare checks the table's columns, warns about a pool not set up for several
// processes, and prepares the statements.
func (s *Store) prepare(ctx context.Context) (*prepared, error) {
	have, err := s.columns(ctx)
	if err != nil {
		return nil, err
	}
	s.warnUnlessShared(ctx)
	returning, err := s.hasReturning(ctx)
	if err != nil {
		return nil, err
	}
	fence := have["fence"] && returning
	if have["fence"] && !returning {
		s.log.WarnContext(ctx, "shedlock: SQLite before 3.35 has no RETURNING: locks on this table carry no "+
			"fencing token, although it has the fence column", "table", s.tableName)
	}
	insert, update := insertSQL, updateSQL
	if fence {
		insert, update = fencedInsertSQL, fencedUpdateSQL
	}
	texts := []string{insert, update, releaseSQL, extendSQL}
	if returning {
		texts = append(texts, batchText(fence))
	}
	stmts, err := s.prepareAll(ctx, texts)
	if err != nil {
		return nil, err
	}
	pr := &prepared{stmts: stmts, fence: fence, batch: returning}
	if have[sqlstore.LastSuccessColumn] {
		if pr.fire, err = s.prepareAll(ctx, fireTexts(fence)); err != nil {
			_ = stmts.Close()
			return nil, err
		}
	}
	return pr, nil
}

// columns reads which columns the table has, by lower-case name, and refuses
// a table without those of every lock table.
func (s *Store) columns(ctx context.Context) (map[string]bool, error) {
	table := s.tableName
	if _, t, ok := strings.Cut(table, "."); ok {
		table = t // pragma_table_info takes the schema as a second argument; the main one is usual
	}
	cols := sqlstore.Columns[bool]{Table: s.tableName, Dir: "sqlite"}
	scan := func(rows *sql.Rows) (string, bool, error) {
		var name string
		err := rows.Scan(&name)
		return strings.ToLower(name), true, err
	}
	if err := cols.ReadColumns(ctx, s.db, "", scan, columnsSQL, table); err != nil {
		return nil, err
	}
	err := cols.Require([]sqlstore.Required[bool]{{Name: "name"}, {Name: "lock_until"}, {Name: "locked_at"}, {Name: "locked_by"}}, nil)
	if err != nil {
		return nil, err
	}
	return cols.ByName, nil
}

// prepareAll prepares texts on the table.
func (s *Store) prepareAll(ctx context.Context, texts []string) (sqlstore.Prepared, error) {
	for i, t := range texts {
		texts[i] = s.sqlOf(t)
	}
	return sqlstore.Prepare(ctx, s.db, s.table, texts...)
}

// hasReturning reports whether SQLite has RETURNING (3.35), which fencing
// tokens and the batch statement need. An older SQLite keeps locking as
// before, one name at a time and without tokens.
func (s *Store) hasReturning(ctx context.Context) (bool, error) {
	var version string
	if err := s.db.QueryRowContext(ctx, versionSQL).Scan(&version); err != nil {
		return false, fmt.Errorf("shedlock: read the SQLite version: %w", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil || major < 3 || (major == 3 && minor < 35) {
		return false, nil
	}
	return true, nil
}

func (s *Store) sqlOf(stmt string) string { return strings.ReplaceAll(stmt, "{t}", s.table) }

// warnUnlessShared warns when the pool is not set up for several processes. It
// is advice, not a guard: without a busy timeout a busy file makes lock attempts
// fail, which is safe, only noisy.
func (s *Store) warnUnlessShared(ctx context.Context) {
	var busy int
	var mode string
	if err := s.db.QueryRowContext(ctx, settingsSQL).Scan(&busy, &mode); err != nil {
		return
	}
	if busy <= 0 || !strings.EqualFold(mode, "wal") {
		s.log.WarnContext(ctx, "shedlock: SQLite connection is not set up for several processes; "+
			"open the database with shedlock.SQLiteDSNParams", "busy_timeout_ms", busy, "journal_mode", mode)
	}
}

func (s *Store) exec(ctx context.Context, which int, args ...any) (bool, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(p.stmts[which].ExecContext(ctx, args...))
}

// acquire runs an acquiring statement; with the fence column, the token it
// returns is the proof that it took the row. args gives the statement's
// arguments, which the fence column adds to.
func (s *Store) acquire(ctx context.Context, which int, args func(fence bool) []any) (sqlstore.Grant, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	return grant(ctx, p.stmts[which], p.fence, args(p.fence)...)
}

// grant runs st, an acquiring statement: with the fence column (fence), it
// returns the token, the proof that it took the row; without, its count of
// rows changed is.
func grant(ctx context.Context, st *sql.Stmt, fence bool, args ...any) (sqlstore.Grant, error) {
	if !fence {
		ok, err := sqlstore.Changed(st.ExecContext(ctx, args...))
		return sqlstore.Grant{OK: ok}, err
	}
	var g sqlstore.Grant
	switch err := st.QueryRowContext(ctx, args...).Scan(&g.Fence); {
	case errors.Is(err, sql.ErrNoRows):
		return sqlstore.Grant{}, nil
	case err != nil:
		return sqlstore.Grant{}, err
	}
	g.OK = true
	return g, nil
}

// Insert makes the row and takes it, if the name has no row yet.
func (s *Store) Insert(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	return s.acquire(ctx, stmtInsert, func(fence bool) []any {
		if fence {
			return []any{a.Name, mostFor.Milliseconds(), a.Token, hostMicros()}
		}
		return []any{a.Name, mostFor.Milliseconds(), a.Token}
	})
}

// Update takes the row if its lock has run out.
func (s *Store) Update(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	return s.acquire(ctx, stmtUpdate, func(fence bool) []any {
		if fence {
			return []any{mostFor.Milliseconds(), a.Token, hostMicros(), a.Name}
		}
		return []any{mostFor.Milliseconds(), a.Token, a.Name}
	})
}

// hostMicros is the host's clock in microseconds since 1970, the floor of a
// fencing token (see fencedInsertSQL).
func hostMicros() int64 { return time.Now().UnixMicro() }

// Release ends the token's lock, keeping it until leastFor after it was taken.
func (s *Store) Release(ctx context.Context, a sqlstore.Args, leastFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtRelease, leastFor.Milliseconds(), a.Name, a.Token)
}

// Extend moves the token's unexpired lock's end to now + mostFor.
func (s *Store) Extend(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtExtend, mostFor.Milliseconds(), a.Name, a.Token)
}

// NameKey is the name itself: SQLite stores any text exactly, and the table's
// DDL compares names byte for byte.
func (s *Store) NameKey(ctx context.Context, name string) (string, error) {
	if _, err := s.setup.Get(ctx); err != nil {
		return "", err
	}
	return name, nil
}

// Close releases the prepared statements.
func (s *Store) Close() error {
	return s.setup.Reset(func(p *prepared) error { return errors.Join(p.stmts.Close(), p.fire.Close()) })
}
