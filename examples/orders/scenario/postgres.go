package scenario

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
)

// FreshPostgres creates an empty database on the PostgreSQL server of dsn (a
// URL), so that a run shares no table with anything else, and returns a URL for
// it and a function that drops it.
func FreshPostgres(ctx context.Context, dsn, prefix string) (string, func() error, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("scenario: parse PostgreSQL URL: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("scenario: %w", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("scenario: create database %s (the demo needs CREATEDB on the server): %w", name, err)
	}
	u.Path = "/" + name
	drop := func() error {
		defer db.Close()
		// FORCE: a pod's pool may still hold a connection for a moment.
		_, err := db.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	}
	return u.String(), drop, nil
}
