package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// The stores the command knows, by their -store names.
const (
	storeMySQL    = "mysql"
	storePostgres = "postgres"
	storeSQLite   = "sqlite"
	storeRedis    = "redis"
	storeEtcd     = "etcd"
)

// keyed reports a store whose locks are keys under an env, not rows of a table.
func keyed(store string) bool { return store == storeRedis || store == storeEtcd }

// storeNames maps every accepted -store spelling to its store.
var storeNames = map[string]string{
	"mysql": storeMySQL, "mariadb": storeMySQL,
	"postgres": storePostgres, "postgresql": storePostgres, "pg": storePostgres,
	"sqlite": storeSQLite, "sqlite3": storeSQLite,
	"redis": storeRedis,
	"etcd":  storeEtcd,
}

// resolveStore returns the store to open: the one -store names, else the one
// the DSN's form shows. A -store that contradicts the DSN's form is an error,
// since the driver would fail later with a message about something else.
func resolveStore(flagStore, dsn string) (string, error) {
	inferred, why := inferStore(dsn)
	if flagStore == "" {
		if inferred == "" {
			return "", usageError{fmt.Sprintf("cannot tell the store from -dsn %s: give -store mysql, postgres, sqlite, redis or etcd", quoteDSN(dsn))}
		}
		return inferred, nil
	}
	store, ok := storeNames[strings.ToLower(flagStore)]
	if !ok {
		return "", usageError{fmt.Sprintf("-store %q: want mysql, postgres (or pg), sqlite, redis or etcd", flagStore)}
	}
	// A URL scheme is certain; the other signs are guesses, which -store overrides.
	if inferred != "" && inferred != store && why == "scheme" {
		return "", usageError{fmt.Sprintf("-store %s, but -dsn is a %s URL: drop -store, or give a %s DSN", flagStore, inferred, store)}
	}
	return store, nil
}

// inferStore tells the store from the DSN's form, and how sure it is: "scheme"
// for a URL scheme, "form" for a file path or a MySQL DSN. "" when it cannot.
func inferStore(dsn string) (store, why string) {
	scheme, _, hasScheme := strings.Cut(dsn, "://")
	if hasScheme {
		switch strings.ToLower(scheme) {
		case "postgres", "postgresql":
			return storePostgres, "scheme"
		case "redis", "rediss":
			return storeRedis, "scheme"
		case "etcd", "etcds":
			return storeEtcd, "scheme"
		case "file":
			return storeSQLite, "scheme"
		}
		return "", ""
	}
	if strings.HasPrefix(dsn, "file:") || looksLikeSQLiteFile(dsn) {
		return storeSQLite, "form"
	}
	if _, err := mysql.ParseDSN(dsn); err == nil && strings.Contains(dsn, "/") {
		return storeMySQL, "form"
	}
	return "", ""
}

// looksLikeSQLiteFile reports a DSN that names a file: one that exists, or a
// path ending in a SQLite file's usual extension.
func looksLikeSQLiteFile(dsn string) bool {
	for _, ext := range []string{".db", ".sqlite", ".sqlite3", ".db3"} {
		if strings.HasSuffix(strings.ToLower(dsn), ext) {
			return true
		}
	}
	fi, err := os.Stat(dsn)
	return err == nil && fi.Mode().IsRegular()
}

// quoteDSN shows a DSN in a message without its password.
func quoteDSN(dsn string) string {
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		if userinfo, host, ok := strings.Cut(rest, "@"); ok {
			if user, _, ok := strings.Cut(userinfo, ":"); ok {
				return display(scheme + "://" + user + ":***@" + host)
			}
		}
		return display(dsn)
	}
	if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
		if i := strings.LastIndex(dsn, "@"); i >= 0 {
			return display(cfg.User + ":***" + dsn[i:])
		}
	}
	return display(dsn)
}
