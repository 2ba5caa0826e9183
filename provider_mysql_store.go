package shedlock

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// mysqlStore runs the MySQL/MariaDB statements; it is the provider's sqlStore.
type mysqlStore struct {
	db        *sql.DB
	table     string // quoted
	tableName string // as WithTableName gave it
	lockedBy  string
	setup     *setupGate[mysqlPrepared]
}

// mysqlPrepared is what the first use finds and prepares.
type mysqlPrepared struct {
	stmts                 [4]*sql.Stmt // by stmtInsert, stmtUpdate, stmtRelease, stmtExtend
	owned, ownedUnexpired string
	nameCheck             string // see mysqlTable.nameCheck
	nameCol               mysqlColumn
	sqlOf                 func(stmt string) string // the table named, the zone pinned: for the admin statements
}

func (s *mysqlStore) prepared(ctx context.Context) (*mysqlPrepared, error) {
	return s.setup.get(ctx, s.prepare)
}

// prepare checks the session and the table, then prepares the statements.
func (s *mysqlStore) prepare(ctx context.Context) (*mysqlPrepared, error) {
	var version string
	var autocommit int
	if err := s.db.QueryRowContext(ctx, mysqlSession).Scan(&version, &autocommit); err != nil {
		return nil, fmt.Errorf("shedlock: read server version and session settings: %w", err)
	}
	if autocommit == 0 {
		return nil, fmt.Errorf("%w: the session's autocommit is off (autocommit=0 in the DSN, the server's "+
			"autocommit setting or its init_connect): lock statements would never commit, and a lock "+
			"would vanish when its connection closes; connect with autocommit=1, the default", ErrUnsafeStore)
	}
	dialect, err := detectUTCDialect(ctx, s.db, version)
	if err != nil {
		return nil, err
	}
	tbl, err := inspectMySQLTable(ctx, s.db, s.tableName)
	if err != nil {
		return nil, err
	}
	if err := tbl.checkLockedBy(ctx, s.db, s.lockedBy); err != nil {
		return nil, err
	}
	sqlOf := func(stmt string) string { return dialect(strings.ReplaceAll(stmt, "{t}", s.table)) }
	stmts, err := prepareAll(ctx, s.db, s.table, [4]string{
		sqlOf(mysqlInsert), sqlOf(mysqlUpdate), sqlOf(mysqlRelease), sqlOf(mysqlExtend)})
	if err != nil {
		return nil, err
	}
	return &mysqlPrepared{stmts: stmts, owned: sqlOf(mysqlOwned), ownedUnexpired: sqlOf(mysqlOwnedUnexpired),
		nameCheck: tbl.nameCheck(), nameCol: tbl.name, sqlOf: sqlOf}, nil
}

func (s *mysqlStore) exec(ctx context.Context, which int, args ...any) (bool, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return false, err
	}
	return execChanged(ctx, p.stmts[which], args...)
}

func (s *mysqlStore) insert(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtInsert, a.name, mostFor.Microseconds(), a.token)
}

func (s *mysqlStore) update(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtUpdate, mostFor.Microseconds(), a.token, a.name)
}

func (s *mysqlStore) release(ctx context.Context, a sqlArgs, leastFor time.Duration) (bool, error) {
	least := leastFor.Microseconds()
	changed, err := s.exec(ctx, stmtRelease, least, least, a.name, a.token)
	if err != nil || changed {
		return changed, err
	}
	return s.found(ctx, false, a)
}

func (s *mysqlStore) extend(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	changed, err := s.exec(ctx, stmtExtend, mostFor.Microseconds(), a.name, a.token)
	if err != nil || changed {
		return changed, err
	}
	return s.found(ctx, true, a)
}

// found runs a rare confirming SELECT COUNT(*) after an UPDATE reported 0 rows,
// which MySQL also reports for a row left as it was: the row is this token's
// (and, with unexpired, not expired) when it finds one.
func (s *mysqlStore) found(ctx context.Context, unexpired bool, a sqlArgs) (bool, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return false, err
	}
	q := p.owned
	if unexpired {
		q = p.ownedUnexpired
	}
	var n int
	if err := s.db.QueryRowContext(ctx, q, a.name, a.token).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// nameKey asks the server whether the name column stores name exactly, and for
// the column collation's weight of it: names of equal weight are one row.
func (s *mysqlStore) nameKey(ctx context.Context, name string) (string, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return "", err
	}
	var exact bool
	var weight sql.NullString
	if err := s.db.QueryRowContext(ctx, p.nameCheck, name, name, name).Scan(&exact, &weight); err != nil {
		return "", fmt.Errorf("check the name against the name column: %w", err)
	}
	if !exact || (p.nameCol.dataType == "char" && strings.HasSuffix(name, " ")) {
		return "", fmt.Errorf("%w: lock %q: the name column (%s, character set %s) cannot store this name exactly; "+
			"it would store a cut or changed name and lock that row instead", ErrInvalidConfig, name, p.nameCol, p.nameCol.charset)
	}
	sum := sha256.Sum256([]byte(weight.String))
	return string(sum[:16]), nil
}
