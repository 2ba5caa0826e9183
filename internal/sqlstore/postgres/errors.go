package postgres

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// readOnly says what a read-only session's error means for locks.
func readOnly(err error) error {
	if err != nil && sqlState(err) == "25006" { // read_only_sql_transaction
		return fmt.Errorf("%w: the session is read-only (a hot standby, or default_transaction_read_only): %w",
			lockerr.UnsafeStore, err)
	}
	return err
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
