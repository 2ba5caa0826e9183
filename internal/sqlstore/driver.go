package sqlstore

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// driverDatabases names the database of each driver package a user may hand a
// provider by mistake.
var driverDatabases = map[string]string{
	"github.com/go-sql-driver/mysql": "MySQL",
	"github.com/jackc/pgx/v5/stdlib": "PostgreSQL",
	"github.com/jackc/pgx/v4/stdlib": "PostgreSQL",
	"github.com/lib/pq":              "PostgreSQL",
	"modernc.org/sqlite":             "SQLite",
	"github.com/mattn/go-sqlite3":    "SQLite",
}

// contextDrivers are the drivers known to end a statement when its context
// ends, even one blocked on a connection that no longer answers: go-sql-driver
// closes the connection, pgx sets a past deadline on it. lib/pq sends a cancel
// request and waits for the server, which on a dead connection never answers.
// The SQLite drivers stay bounded: a statement there may wait in busy_timeout
// for the file's lock, and no test here shows them ending that wait.
var contextDrivers = map[string]bool{
	"github.com/go-sql-driver/mysql": true,
	"github.com/jackc/pgx/v5/stdlib": true,
	"github.com/jackc/pgx/v4/stdlib": true,
}

// HonoursContext reports whether db's driver is one known to end a statement
// when its context ends (see Config.HonoursContext).
func HonoursContext(db *sql.DB) bool { return contextDrivers[DriverPackage(db)] }

// DriverPackage returns the package path of db's driver.
func DriverPackage(db *sql.DB) string {
	t := reflect.TypeOf(db.Driver())
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// CheckDriver refuses a *sql.DB whose driver is known to speak to another
// database than want, naming the constructor that fits it. Drivers it does not
// know pass.
func CheckDriver(ctor, want string, db *sql.DB) error {
	pkg := DriverPackage(db)
	got, ok := driverDatabases[pkg]
	if !ok || got == want {
		return nil
	}
	return fmt.Errorf("%w: %s was given a %s connection (driver %s); use New%sProvider",
		lockerr.InvalidOption, ctor, got, pkg, strings.ReplaceAll(got, "PostgreSQL", "Postgres"))
}
