// Package postgres is the PostgreSQL dialect of the SQL lock store: its
// statements, its first-use checks of the session and the table, and its row
// scan. The root package's PostgresProvider is an engine on this Store.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// maxIdentifier is the longest name PostgreSQL keeps: it cuts longer ones to
// this many bytes.
const maxIdentifier = 63

// caps: one upsert takes the lock whether or not the row exists; a timestamp
// holds any lock a time.Duration asks for; admin times are microseconds.
var caps = sqlstore.Caps{Upserts: true, TimeUnit: time.Microsecond}

// Store runs the PostgreSQL statements on one table. Its Insert and Update are
// the same upsert, so a name's first acquisition is one statement like every
// other.
type Store struct {
	db       *sql.DB
	table    string // quoted
	lockedBy string
	prepare  bool // prepare the statements: see driverNeedsPrepare
	setup    *sqlstore.Gate[prepared]
	batch    *sqlstore.Gate[batchPrepared]   // see prepareBatch
	control  *sqlstore.Gate[controlPrepared] // see prepareControl
}

// prepared is what the first use finds and prepares.
type prepared struct {
	texts      [4]string         // by pgAcquire, pgRelease, pgExtend, pgBatch
	stmts      sqlstore.Prepared // the same but pgBatch, prepared; nil unless the store prepares
	storedName string            // see NameKey
	tbl        *tableInfo
	oid        int64             // the table's, as acquire and extend return it
	fireTexts  [3]string         // CatchUp's statements (see fireTexts); empty without last_success
	fireStmts  sqlstore.Prepared // the same, prepared; nil unless the store prepares
}

// New returns the store of table ("table" on the search_path, or
// "schema.table", folded to lower case) on db, for a provider whose owner is lockedBy. It touches no
// database.
func New(db *sql.DB, table, lockedBy string) (*Store, error) {
	if err := sqlstore.CheckDriver("NewPostgresProvider", "PostgreSQL", db); err != nil {
		return nil, err
	}
	// Fold as PostgreSQL folds an unquoted name, so that "ShedLock" is the table
	// Java ShedLock's unquoted DDL and statements make and use: shedlock.
	table = strings.ToLower(table)
	quoted, err := sqlstore.QuoteTable(table, '"')
	if err != nil {
		return nil, err
	}
	for _, part := range strings.Split(table, ".") {
		if len(part) > maxIdentifier {
			return nil, fmt.Errorf("%w: WithTableName(%q): %q is longer than the %d bytes PostgreSQL keeps of a name",
				lockerr.InvalidOption, table, part, maxIdentifier)
		}
	}
	s := &Store{db: db, table: quoted, lockedBy: lockedBy, prepare: driverNeedsPrepare(db)}
	s.setup = sqlstore.NewGate(s.firstUse)
	s.batch = sqlstore.NewGate(s.prepareBatch)
	s.control = sqlstore.NewGate(s.prepareControl)
	return s, nil
}

// Caps describes the PostgreSQL statements.
func (s *Store) Caps() sqlstore.Caps { return caps }

// Table is the table for messages, unquoted.
func (s *Store) Table() string { return strings.ReplaceAll(s.table, `"`, "") }

// driverNeedsPrepare reports whether db's driver needs the statements prepared to
// send each in one round trip. lib/pq sends a statement with arguments in two
// (it prepares an unnamed statement, then runs it) unless prepared. pgx sends
// it in one either way: in its default mode it prepares and caches statements
// itself, and under its simple protocol it must not be given prepared
// statements at all (it would name them on the server, which a pooler in
// transaction mode cannot keep). Any other driver is left to itself.
func driverNeedsPrepare(db *sql.DB) bool {
	t := reflect.TypeOf(db.Driver())
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "github.com/lib/pq"
}

// firstUse checks the session and the table, then prepares the statements
// where the driver needs it.
func (s *Store) firstUse(ctx context.Context) (*prepared, error) {
	// The pooler check comes first: behind a pooler in transaction mode, the
	// driver's own statements below could already run in the wrong session.
	mode, err := checkPooler(ctx, s.db, sqlstore.DriverPackage(s.db))
	if err != nil {
		return nil, err
	}
	var sess session
	if err := s.db.QueryRowContext(ctx, sessionSQL).Scan(&sess.version, &sess.encoding, &sess.readOnly, &sess.standby); err != nil {
		if pooled, _ := pooledPrepareError(err); pooled {
			return nil, poolerError(mode)
		}
		return nil, fmt.Errorf("shedlock: read the PostgreSQL server's version and session settings: %w", err)
	}
	if err := sess.check(); err != nil {
		return nil, err
	}
	tbl, err := inspectTable(ctx, s.db, s.table, sess.encoding)
	if err != nil {
		return nil, err
	}
	if err := tbl.checkLockedBy(s.lockedBy); err != nil {
		return nil, err
	}
	p := &prepared{texts: statementTexts(s.table, tbl.instant(), tbl.millis(), tbl.fence, tbl.control), tbl: tbl}
	if err := s.db.QueryRowContext(ctx, tableOIDSQL, s.table).Scan(&p.oid); err != nil {
		return nil, fmt.Errorf("shedlock: read the oid of table %s: %w", s.table, err)
	}
	if !tbl.name.deterministic {
		p.storedName = strings.ReplaceAll(storedNameSQL, "{t}", s.table)
	}
	if tbl.lastSuccess {
		p.fireTexts = fireTexts(s.table, tbl.instant(), tbl.millis(), tbl.fence, tbl.control)
	}
	if s.prepare {
		if p.stmts, err = sqlstore.Prepare(ctx, s.db, s.table, p.texts[:pgBatch]...); err != nil {
			return nil, err
		}
		if tbl.lastSuccess {
			if p.fireStmts, err = sqlstore.Prepare(ctx, s.db, s.table, p.fireTexts[:]...); err != nil {
				_ = p.stmts.Close()
				return nil, err
			}
		}
	}
	return p, nil
}

func (s *Store) exec(ctx context.Context, which int, args ...any) (bool, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return false, err
	}
	var res sql.Result
	if p.stmts != nil {
		res, err = p.stmts[which].ExecContext(ctx, args...)
	} else {
		res, err = s.db.ExecContext(ctx, p.texts[which], args...)
	}
	return sqlstore.Changed(res, readOnly(err))
}

// prove runs an acquiring or extending statement and reports whether it changed
// this table's row for this acquisition's token, as its RETURNING shows. A row
// of another table or token is a statement run in the wrong session: an error,
// never a lock. An acquisition on a table with a fence column also returns the
// fencing token it wrote.
func (s *Store) prove(ctx context.Context, which int, token any, args ...any) (sqlstore.Grant, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	var row *sql.Row
	if p.stmts != nil {
		row = p.stmts[which].QueryRowContext(ctx, args...)
	} else {
		row = s.db.QueryRowContext(ctx, p.texts[which], args...)
	}
	acquire := which == pgAcquire
	return s.proveRow(p, row, acquire && p.tbl.fence, acquire && p.tbl.control, token)
}

// proveRow reads what prove reads from row, the fencing token too when
// fenced, and with control whether the row is one the acquisition found
// paused (see controlAcquireSQL), which proves its table alone.
func (s *Store) proveRow(p *prepared, row *sql.Row, fenced, control bool, token any) (sqlstore.Grant, error) {
	var oid int64
	var by string
	var g sqlstore.Grant
	dest := []any{&oid, &by}
	if fenced {
		dest = append(dest, &g.Fence)
	}
	if control {
		dest = append(dest, &g.Paused)
	}
	switch err := row.Scan(dest...); {
	case errors.Is(err, sql.ErrNoRows):
		return sqlstore.Grant{}, nil
	case err != nil:
		return sqlstore.Grant{}, readOnly(err)
	case oid == p.oid && g.Paused:
		return sqlstore.Grant{Paused: true}, nil
	case oid != p.oid || by != token:
		return sqlstore.Grant{}, fmt.Errorf("%w: a lock statement on %s changed a row of table oid %d held by %q, not this "+
			"table (oid %d) and acquisition: the connection runs statements in another session than the one "+
			"that prepared them, as a pooler in transaction mode does", lockerr.UnsafeStore, s.table, oid, by, p.oid)
	}
	g.OK = true
	return g, nil
}

// Insert takes the lock in one statement, whether or not the row exists. A
// serialization failure (under default_transaction_isolation serializable or
// repeatable read) means that another transaction changed the row meanwhile:
// another pod got there first, and nothing was written.
func (s *Store) Insert(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	g, err := s.prove(ctx, pgAcquire, a.Token, a.Name, mostFor.Milliseconds(), a.Token)
	if err != nil && sqlState(err) == "40001" { // serialization_failure
		return sqlstore.Grant{}, nil
	}
	return g, err
}

// Update is Insert: the upsert takes an existing row too.
func (s *Store) Update(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (sqlstore.Grant, error) {
	return s.Insert(ctx, a, mostFor)
}

// Release ends the token's lock. PostgreSQL counts every row an UPDATE's WHERE
// matched, changed or not, so 0 always means "not ours".
func (s *Store) Release(ctx context.Context, a sqlstore.Args, leastFor time.Duration) (bool, error) {
	return s.serialized(ctx, func() (bool, error) {
		return s.exec(ctx, pgRelease, leastFor.Milliseconds(), a.Name, a.Token)
	})
}

// Extend moves the token's unexpired lock's end to now + mostFor.
func (s *Store) Extend(ctx context.Context, a sqlstore.Args, mostFor time.Duration) (bool, error) {
	return s.serialized(ctx, func() (bool, error) {
		g, err := s.prove(ctx, pgExtend, a.Token, mostFor.Milliseconds(), a.Name, a.Token)
		return g.OK, err
	})
}

// serializationRetries is how often a release or extend is sent again at once
// after a serialization failure.
const serializationRetries = 3

// serialized runs a release or extend, again at once after a serialization
// failure: under serializable isolation one often meets a concurrent pod's
// acquisition attempt on the row. The failed statement was rolled back, and
// both statements give the same result whenever they run, so sending it again
// is safe, and it spares the lock the wait of the engine's retry.
func (s *Store) serialized(ctx context.Context, stmt func() (bool, error)) (bool, error) {
	for attempt := 0; ; attempt++ {
		ok, err := stmt()
		if err == nil || attempt == serializationRetries || sqlState(err) != "40001" || ctx.Err() != nil {
			return ok, err
		}
	}
}

// NameKey checks that the name column stores name exactly, and returns what
// makes two names one row. Under a deterministic collation PostgreSQL compares
// text byte for byte, so that is the name itself. Under a nondeterministic one
// (an ICU collation that ignores case or accents), the key is the spelling of
// the row the name finds, one SELECT on the name's first use: two spellings of
// one existing row have the same key. A name without a row yet is its own key
// until its row exists.
func (s *Store) NameKey(ctx context.Context, name string) (string, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return "", err
	}
	if err := p.tbl.checkName(name); err != nil {
		return "", err
	}
	if p.tbl.name.deterministic {
		return name, nil
	}
	var stored string
	switch err := s.db.QueryRowContext(ctx, p.storedName, name).Scan(&stored); {
	case errors.Is(err, sql.ErrNoRows):
		return name, nil
	case err != nil:
		return "", fmt.Errorf("find the row of the name under collation %s: %w", p.tbl.name.collation, err)
	}
	return stored, nil
}

// Close releases the statements prepared for lib/pq; the next use checks the
// table again.
func (s *Store) Close() error {
	return errors.Join(s.batch.Reset(func(bp *batchPrepared) error { return bp.stmt.Close() }),
		s.control.Reset(closeControl), s.setup.Reset(func(p *prepared) error { return errors.Join(p.stmts.Close(), p.fireStmts.Close()) }))
}
