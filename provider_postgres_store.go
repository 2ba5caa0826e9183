package shedlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// postgresStore runs the PostgreSQL statements; it is the provider's sqlStore.
// Its insert and update are the same upsert, so a name's first acquisition is
// one statement like every other.
type postgresStore struct {
	db       *sql.DB
	table    string // quoted
	lockedBy string
	prepare  bool // prepare the statements: see driverNeedsPrepare
	setup    *setupGate[postgresPrepared]
}

// postgresPrepared is what the first use finds and prepares.
type postgresPrepared struct {
	texts      [3]string    // by pgAcquire, pgRelease, pgExtend
	stmts      [3]*sql.Stmt // the same, prepared; nil unless the store prepares
	storedName string       // see nameKey
	tbl        *postgresTable
}

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

// upserts marks postgresStore's insert as taking a free existing row too.
func (s *postgresStore) upserts() {}

func (s *postgresStore) prepared(ctx context.Context) (*postgresPrepared, error) {
	return s.setup.get(ctx, s.firstUse)
}

// firstUse checks the session and the table, then prepares the statements
// where the driver needs it.
func (s *postgresStore) firstUse(ctx context.Context) (*postgresPrepared, error) {
	var sess postgresSession
	if err := s.db.QueryRowContext(ctx, postgresSessionQuery).Scan(&sess.version, &sess.encoding, &sess.readOnly, &sess.standby); err != nil {
		return nil, fmt.Errorf("shedlock: read server version and session settings: %w", err)
	}
	if err := sess.check(); err != nil {
		return nil, err
	}
	tbl, err := inspectPostgresTable(ctx, s.db, s.table, sess.encoding)
	if err != nil {
		return nil, err
	}
	if err := tbl.checkLockedBy(s.lockedBy); err != nil {
		return nil, err
	}
	p := &postgresPrepared{texts: postgresTexts(s.table, tbl.instant(), tbl.millis()), tbl: tbl}
	if !tbl.name.deterministic {
		p.storedName = strings.ReplaceAll(postgresStoredName, "{t}", s.table)
	}
	if s.prepare {
		for i, text := range p.texts {
			if p.stmts[i], err = s.db.PrepareContext(ctx, text); err != nil {
				_ = p.close()
				return nil, fmt.Errorf("shedlock: prepare statements on %s: %w", s.table, err)
			}
		}
	}
	return p, nil
}

// close releases what firstUse prepared.
func (p *postgresPrepared) close() error {
	var errs []error
	for _, st := range p.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

func (s *postgresStore) exec(ctx context.Context, which int, args ...any) (bool, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return false, err
	}
	var res sql.Result
	if st := p.stmts[which]; st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.db.ExecContext(ctx, p.texts[which], args...)
	}
	if err != nil {
		if sqlState(err) == "25006" { // read_only_sql_transaction
			return false, fmt.Errorf("%w: the session is read-only (a hot standby, or default_transaction_read_only): %w",
				ErrUnsafeStore, err)
		}
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// insert takes the lock in one statement, whether or not the row exists. A
// serialization failure (under default_transaction_isolation serializable or
// repeatable read) means that another transaction changed the row meanwhile:
// another pod got there first, and nothing was written.
func (s *postgresStore) insert(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	ok, err := s.exec(ctx, pgAcquire, a.name, mostFor.Milliseconds(), a.token)
	if err != nil && sqlState(err) == "40001" { // serialization_failure
		return false, nil
	}
	return ok, err
}

func (s *postgresStore) update(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.insert(ctx, a, mostFor)
}

// release and extend: PostgreSQL counts every row an UPDATE's WHERE matched,
// changed or not, so 0 always means "not ours".
func (s *postgresStore) release(ctx context.Context, a sqlArgs, leastFor time.Duration) (bool, error) {
	return s.execSerialized(ctx, pgRelease, leastFor.Milliseconds(), a.name, a.token)
}

func (s *postgresStore) extend(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.execSerialized(ctx, pgExtend, mostFor.Milliseconds(), a.name, a.token)
}

// postgresSerializationRetries is how often a release or extend is sent again
// at once after a serialization failure.
const postgresSerializationRetries = 3

// execSerialized runs a release or extend, again at once after a serialization
// failure: under serializable isolation one often meets a concurrent pod's
// acquisition attempt on the row. The failed statement was rolled back, and
// both statements give the same result whenever they run, so sending it again
// is safe, and it spares the lock the wait of the engine's retry.
func (s *postgresStore) execSerialized(ctx context.Context, which int, args ...any) (bool, error) {
	for attempt := 0; ; attempt++ {
		ok, err := s.exec(ctx, which, args...)
		if err == nil || attempt == postgresSerializationRetries || sqlState(err) != "40001" || ctx.Err() != nil {
			return ok, err
		}
	}
}

// nameKey checks that the name column stores name exactly, and returns what
// makes two names one row. Under a deterministic collation PostgreSQL compares
// text byte for byte, so that is the name itself. Under a nondeterministic one
// (an ICU collation that ignores case or accents), the key is the spelling of
// the row the name finds, one SELECT on the name's first use: two spellings of
// one existing row have the same key. A name without a row yet is its own key
// until its row exists.
func (s *postgresStore) nameKey(ctx context.Context, name string) (string, error) {
	p, err := s.prepared(ctx)
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

// sqlState returns a PostgreSQL error's SQLSTATE code, "" for other errors,
// without importing a driver: pgx's *pgconn.PgError and lib/pq's *pq.Error
// (1.10.8 and later) have a SQLState method; older lib/pq errors have only a
// Code field of type pq.ErrorCode.
func sqlState(err error) string {
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		return s.SQLState()
	}
	for ; err != nil; err = errors.Unwrap(err) {
		v := reflect.Indirect(reflect.ValueOf(err))
		if v.Kind() != reflect.Struct {
			continue
		}
		if f := v.FieldByName("Code"); f.IsValid() && f.Kind() == reflect.String && f.Type().Name() == "ErrorCode" {
			return f.String()
		}
	}
	return ""
}
