package shedlocktest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// OpenDB opens a pool as sql.Open(driverName, dsn) would, with every write
// passed through f (see Connector). The pool's Driver is the named driver's
// own, so a provider that tells the database by its driver still does.
func (f *Faults) OpenDB(driverName, dsn string) (*sql.DB, error) {
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	d := probe.Driver()
	_ = probe.Close() // it never connected
	var c driver.Connector = dsnConnector{d: d, dsn: dsn}
	if dc, ok := d.(driver.DriverContext); ok {
		if c, err = dc.OpenConnector(dsn); err != nil {
			return nil, fmt.Errorf("shedlocktest: open %s: %w", driverName, err)
		}
	}
	return sql.OpenDB(f.Connector(c)), nil
}

// Connector wraps c so that every statement a connection runs that writes (its
// text has the word INSERT, UPDATE, DELETE, REPLACE or MERGE) goes through Do;
// reads, prepares and transactions' begin and end go straight on. Open the
// pool with sql.OpenDB(f.Connector(c)).
func (f *Faults) Connector(c driver.Connector) driver.Connector {
	return faultConnector{c: c, f: f}
}

type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

type faultConnector struct {
	c driver.Connector
	f *Faults
}

func (c faultConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: conn, f: c.f}, nil
}

func (c faultConnector) Driver() driver.Driver { return c.c.Driver() }

// Close closes the wrapped connector where it can be, as sql.DB.Close would.
func (c faultConnector) Close() error {
	if cl, ok := c.c.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// isWrite reports whether query is a statement that writes, by its words.
func isWrite(query string) bool {
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) }) {
		switch strings.ToUpper(w) {
		case "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE":
			return true
		}
	}
	return false
}

// faultConn is a driver connection whose writes go through f. It offers
// every optional interface database/sql asks for, and answers as
// database/sql would for the wrapped connection's missing ones (ErrSkip, or
// nothing to do).
type faultConn struct {
	driver.Conn
	f *Faults
}

func (c *faultConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if pc, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &faultStmt{Stmt: st, conn: c, write: isWrite(query)}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return c.f.exec(ctx, isWrite(query), func(ctx context.Context) (driver.Result, error) {
		return ec.ExecContext(ctx, query, args)
	})
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return c.f.query(ctx, isWrite(query), func(ctx context.Context) (driver.Rows, error) {
		return qc.QueryContext(ctx, query, args)
	})
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if bc, ok := c.Conn.(driver.ConnBeginTx); ok {
		return bc.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck // the wrapped driver offers nothing newer
}

func (c *faultConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *faultConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *faultConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *faultConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type faultStmt struct {
	driver.Stmt
	conn  *faultConn
	write bool
}

func (s *faultStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.f.exec(ctx, s.write, func(ctx context.Context) (driver.Result, error) {
		if ec, ok := s.Stmt.(driver.StmtExecContext); ok {
			return ec.ExecContext(ctx, args)
		}
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		return s.Stmt.Exec(vals) //nolint:staticcheck // the wrapped driver offers nothing newer
	})
}

func (s *faultStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.f.query(ctx, s.write, func(ctx context.Context) (driver.Rows, error) {
		if qc, ok := s.Stmt.(driver.StmtQueryContext); ok {
			return qc.QueryContext(ctx, args)
		}
		vals, err := values(args)
		if err != nil {
			return nil, err
		}
		return s.Stmt.Query(vals) //nolint:staticcheck // the wrapped driver offers nothing newer
	})
}

func (s *faultStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.conn.CheckNamedValue(nv)
}

// values is args without names, for a driver that knows no context.
func values(args []driver.NamedValue) ([]driver.Value, error) {
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, fmt.Errorf("shedlocktest: the driver takes no named argument (%s)", a.Name)
		}
		vals[i] = a.Value
	}
	return vals, nil
}

// exec runs a statement, through Do when it writes.
func (f *Faults) exec(ctx context.Context, write bool, run func(context.Context) (driver.Result, error)) (driver.Result, error) {
	if !write {
		return run(ctx)
	}
	var res driver.Result
	err := f.Do(ctx, func(ctx context.Context) error {
		var err error
		res, err = run(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// query runs a statement that returns rows (an INSERT ... RETURNING), through
// Do when it writes. The rows of an answer the caller does not get are read
// to their end, so that the statement has run whole before Do goes on.
func (f *Faults) query(ctx context.Context, write bool, run func(context.Context) (driver.Rows, error)) (driver.Rows, error) {
	if !write {
		return run(ctx)
	}
	var rows driver.Rows
	err := f.Do(ctx, func(ctx context.Context) error {
		if rows != nil { // a replay: the first answer is not the caller's
			if err := drain(rows); err != nil {
				return err
			}
		}
		var err error
		rows, err = run(ctx)
		if err != nil {
			rows = nil
		}
		return err
	})
	if err != nil {
		if rows != nil {
			_ = drain(rows)
		}
		return nil, err
	}
	return rows, nil
}

// drain reads rows to their end and closes them.
func drain(rows driver.Rows) error {
	dest := make([]driver.Value, len(rows.Columns()))
	var err error
	for err == nil {
		err = rows.Next(dest)
	}
	cerr := rows.Close()
	if err != io.EOF {
		return err
	}
	return cerr
}
