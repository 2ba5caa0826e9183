package postgres

import (
	"errors"
	"fmt"
	"testing"
)

// pgxError has the method pgx's *pgconn.PgError and lib/pq's *pq.Error
// (1.10.8 on) share.
type pgxError struct{ code string }

func (e *pgxError) Error() string    { return "ERROR: " + e.code }
func (e *pgxError) SQLState() string { return e.code }

// ErrorCode and oldPQError are lib/pq's error before 1.10.8: a Code field of
// type ErrorCode, no method.
type ErrorCode string

type oldPQError struct {
	Severity string
	Code     ErrorCode
}

func (e oldPQError) Error() string { return "pq: " + string(e.Code) }

// otherError has a Code field of another type: not read as a SQLSTATE.
type otherError struct{ Code string }

func (e *otherError) Error() string { return e.Code }

func TestSQLState(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&pgxError{"40001"}, "40001"},
		{fmt.Errorf("acquire: %w", &pgxError{"25006"}), "25006"},
		{&oldPQError{Code: "40001"}, "40001"},
		{oldPQError{Code: "40001"}, "40001"},
		{fmt.Errorf("acquire: %w", &oldPQError{Code: "25006"}), "25006"},
		{&otherError{"40001"}, ""},
		{errors.New("40001"), ""},
		{nil, ""},
	} {
		if got := sqlState(tc.err); got != tc.want {
			t.Errorf("sqlState(%#v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
