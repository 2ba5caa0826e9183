// Package mysql is the MySQL and MariaDB dialect of the SQL lock store: its
// statements, its first-use checks of the session and the table, and its row
// scan. The root package's MySQLProvider is an engine on this Store.
package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// timestampEnd is the last instant a TIMESTAMP column holds. A lock_until past
// it is stored as zero by INSERT IGNORE, which frees the lock at once.
var timestampEnd = time.Date(2038, 1, 19, 3, 14, 7, 0, time.UTC)

// caps: one upsert makes the row or takes it; lock_until is a TIMESTAMP; admin
// times are microseconds.
var caps = sqlstore.Caps{Upserts: true, LatestLockEnd: timestampEnd, TimeUnit: time.Microsecond}

// Statement indexes in prepared.stmts.
const (
	stmtAcquire = iota
	stmtRelease
	stmtExtend
)

// Store runs the MySQL/MariaDB statements on one table.
type Store struct {
	db        *sql.DB
	table     string // quoted
	tableName string // as WithTableName gave it
	lockedBy  string
	setup     *sqlstore.Gate[prepared]
	batch     *sqlstore.Gate[batchPrepared]   // see prepareBatch
	control   *sqlstore.Gate[controlPrepared] // see prepareControl
	// countsChanged: an acquisition reported 0 rows, which only a pool that
	// counts changed rows (no clientFoundRows) does; from then on a 1 is an
	// insert.
	countsChanged atomic.Bool
}

// prepared is what the first use finds and prepares.
type prepared struct {
	stmts                 sqlstore.Prepared // by stmtAcquire, stmtRelease, stmtExtend
	owned, ownedUnexpired string
	nameCheck             string // see tableInfo.nameCheck
	nameCol               column
	sqlOf                 func(stmt string) string // the table named, the zone pinned: for the admin statements
	fence                 bool                     // the table has the fence column: acquiring returns the token
	batchTexts            []string                 // see batchTexts; prepared by the first batch
	returning             bool                     // the batch upsert returns its rows (MariaDB)
	fire                  sqlstore.Prepared        // CatchUp's statements (see fireTexts); nil without last_success
	control               bool                     // the table has the control columns: acquisitions refuse a pause
	missingControl        []string                 // the control columns the table lacks
	runRequests           string                   // see runRequestsSQL; prepared by the first RunRequests
	allLocks, oneLock     string                   // the lock list's queries, with the control columns where there are
}

// New returns the store of table on db, for a provider whose owner is lockedBy.
// It touches no database.
func New(db *sql.DB, table, lockedBy string) (*Store, error) {
	if err := sqlstore.CheckDriver("NewMySQLProvider", "MySQL", db); err != nil {
		return nil, err
	}
	quoted, err := sqlstore.QuoteTable(table, '`')
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, table: quoted, tableName: table, lockedBy: lockedBy}
	s.setup = sqlstore.NewGate(s.prepare)
	s.batch = sqlstore.NewGate(s.prepareBatch)
	s.control = sqlstore.NewGate(s.prepareControl)
	return s, nil
}

// Caps describes the MySQL statements.
func (s *Store) Caps() sqlstore.Caps { return caps }

// Table is the table as WithTableName gave it.
func (s *Store) Table() string { return s.tableName }

// prepare checks the session and the table, then prepares the statements.
func (s *Store) prepare(ctx context.Context) (*prepared, error) {
	var version string
	var autocommit int
	if err := s.db.QueryRowContext(ctx, sessionSQL).Scan(&version, &autocommit); err != nil {
		return nil, fmt.Errorf("shedlock: read the MySQL server's version and session settings "+
			"(SELECT VERSION(), @@session.autocommit): %w", err)
	}
	if autocommit == 0 {
		return nil, fmt.Errorf("%w: the session's autocommit is off (autocommit=0 in the DSN, the server's "+
			"autocommit setting or its init_connect): lock statements would never commit, and a lock "+
			"would vanish when its connection closes; connect with autocommit=1, the default", lockerr.UnsafeStore)
	}
	dialect, err := detectUTCDialect(ctx, s.db, version)
	if err != nil {
		return nil, err
	}
	tbl, err := inspectTable(ctx, s.db, s.tableName)
	if err != nil {
		return nil, err
	}
	if err := tbl.checkLockedBy(ctx, s.db, s.lockedBy); err != nil {
		return nil, err
	}
	sqlOf := func(stmt string) string { return dialect(strings.ReplaceAll(stmt, "{t}", s.table)) }
	mariadb := strings.Contains(strings.ToLower(version), "mariadb")
	acquire := acquireSQL
	if tbl.fence {
		acquire = fencedAcquireSQL
	}
	acquire = controlReplacer(tbl.control).Replace(acquire)
	stmts, err := sqlstore.Prepare(ctx, s.db, s.table, sqlOf(acquire), sqlOf(releaseSQL), sqlOf(extendSQL))
	if err != nil {
		return nil, err
	}
	var fire sqlstore.Prepared
	if tbl.lastSuccess {
		texts := fireTexts(tbl.fence, tbl.control)
		for i, t := range texts {
			texts[i] = sqlOf(t)
		}
		if fire, err = sqlstore.Prepare(ctx, s.db, s.table, texts...); err != nil {
			_ = stmts.Close()
			return nil, err
		}
	}
	names := strings.NewReplacer("{charset}", tbl.name.charset, "{collation}", tbl.name.collation)
	return &prepared{stmts: stmts, owned: sqlOf(ownedSQL), ownedUnexpired: sqlOf(ownedUnexpiredSQL),
		nameCheck: tbl.nameCheck(), nameCol: tbl.name, sqlOf: sqlOf, fence: tbl.fence,
		batchTexts: batchTexts(tbl, sqlOf, mariadb), returning: mariadb, fire: fire,
		control: tbl.control, missingControl: tbl.missingControl, runRequests: sqlOf(names.Replace(runRequestsSQL)),
		allLocks: sqlOf(locksText(tbl.control, allLocksTail)), oneLock: sqlOf(locksText(tbl.control, oneLockTail))}, nil
}

func (s *Store) exec(ctx context.Context, which int, args ...any) (bool, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(p.stmts[which].ExecContext(ctx, args...))
}

// Insert takes the lock in one statement, making the row if the name has
// none. A conflict that rolled the statement back means another pod's
// statement on the row won: not acquired, not a store error.
//
// The count of rows tells the outcome, except that 1 is both "inserted" and,
// on a pool opened with clientFoundRows=true, "held, left as it was": a 1 is
// confirmed by the token until a 0 has shown that the pool counts changed
// rows, where a 1 is an insert. Steady state is one statement; with
// clientFoundRows, a lost attempt costs the confirming SELECT too.
//
// On a table with the fence column, the statement also writes the fencing
// token and returns it as its LAST_INSERT_ID, which the server sends with the
// count of rows: no round trip more.
func (s *Store) Insert(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	micros := mostFor.Microseconds()
	res, err := p.stmts[stmtAcquire].ExecContext(ctx, a.Name, micros, a.Token, a.Token, micros)
	if err != nil {
		return sqlstore.Grant{}, conflictOrError(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return sqlstore.Grant{}, err
	}
	if n == 0 {
		s.countsChanged.Store(true)
	}
	var g sqlstore.Grant
	if g.Paused, err = pausedGrant(p, res); err != nil || g.Paused {
		return g, err
	}
	switch {
	case n == 1 && !s.countsChanged.Load():
		g.OK, err = s.found(ctx, false, a)
	case n > 0:
		g.OK = true
	}
	if g.OK && p.fence {
		if g.Fence, err = res.LastInsertId(); err == nil && g.Fence <= 0 {
			err = fmt.Errorf("shedlock: the acquiring statement on %s returned no fencing token (LAST_INSERT_ID %d)", s.table, g.Fence)
		}
	}
	if err != nil {
		return sqlstore.Grant{}, err
	}
	return g, nil
}

// Update is Insert: the upsert takes an existing row too.
func (s *Store) Update(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	return s.Insert(ctx, a, mostFor)
}

// Release ends the token's lock, keeping it until leastFor after it was taken.
func (s *Store) Release(ctx context.Context, a sqlstore.Args, leastFor time.Duration) (bool, error) {
	least := leastFor.Microseconds()
	changed, err := s.exec(ctx, stmtRelease, least, least, a.Name, a.Token)
	if err != nil || changed {
		return changed, nodeError(err)
	}
	return s.found(ctx, false, a)
}

// Extend moves the token's unexpired lock's end to now + mostFor.
func (s *Store) Extend(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (bool, error) {
	changed, err := s.exec(ctx, stmtExtend, mostFor.Microseconds(), a.Name, a.Token)
	if err != nil || changed {
		return changed, nodeError(err)
	}
	return s.found(ctx, true, a)
}

// found runs a rare confirming SELECT COUNT(*) after a statement's count of
// rows left the outcome open (see Insert, Release and Extend): the row is
// this token's (and, with unexpired, not expired) when it finds one.
func (s *Store) found(ctx context.Context, unexpired bool, a sqlstore.Args) (bool, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return false, err
	}
	q := p.owned
	if unexpired {
		q = p.ownedUnexpired
	}
	var n int
	if err := s.db.QueryRowContext(ctx, q, a.Name, a.Token).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// NameKey asks the server whether the name column stores name exactly, and for
// the column collation's weight of it: names of equal weight are one row.
func (s *Store) NameKey(ctx context.Context, name string) (string, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return "", err
	}
	var exact bool
	var weight sql.NullString
	if err := s.db.QueryRowContext(ctx, p.nameCheck, name, name, name).Scan(&exact, &weight); err != nil {
		return "", fmt.Errorf("check the name against the name column: %w", err)
	}
	return p.nameKey(name, exact, weight)
}

// nameKey is the key of a name the name check found stored exactly or not,
// with the collation's weight of it.
func (p *prepared) nameKey(name string, exact bool, weight sql.NullString) (string, error) {
	if !exact || (p.nameCol.dataType == "char" && strings.HasSuffix(name, " ")) {
		return "", fmt.Errorf("%w: lock %q: the name column (%s, character set %s) cannot store this name exactly; "+
			"it would store a cut or changed name and lock that row instead", lockerr.InvalidConfig, name, p.nameCol, p.nameCol.charset)
	}
	sum := sha256.Sum256([]byte(weight.String))
	return string(sum[:16]), nil
}

// Close releases the prepared statements; the next use prepares them again.
func (s *Store) Close() error {
	return errors.Join(s.batch.Reset(func(bp *batchPrepared) error { return bp.stmts.Close() }),
		s.control.Reset(closeControl), s.setup.Reset(func(p *prepared) error { return errors.Join(p.stmts.Close(), p.fire.Close()) }))
}
