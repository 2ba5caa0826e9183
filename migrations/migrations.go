// Package migrations holds the lock table's DDL for each store, as numbered
// up/down files that golang-migrate and goose-style tools read, and as an embedded
// file system for programs that apply them themselves.
//
// The table is compatible with Java ShedLock's: a Go service and a Java service can
// share it and exclude each other.
package migrations

import "embed"

// FS holds one folder per store ("mysql", ...), each with NNNN_name.up.sql and
// NNNN_name.down.sql files.
//
//go:embed */*.sql
var FS embed.FS
