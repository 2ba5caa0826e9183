package scenario

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// FreshMySQL creates an empty database on the server of dsn, so that a run
// shares no table with anything else, and returns a DSN for it and a function
// that drops it.
func FreshMySQL(ctx context.Context, dsn, prefix string) (string, func() error, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("scenario: parse MySQL DSN: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("scenario: %w", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("scenario: create database %s (the demo needs CREATE and DROP on the server): %w", name, err)
	}
	cfg.DBName = name
	drop := func() error {
		defer db.Close()
		_, err := db.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name)
		return err
	}
	return cfg.FormatDSN(), drop, nil
}
