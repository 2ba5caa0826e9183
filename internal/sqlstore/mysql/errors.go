package mysql

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Server errors that roll back an acquiring statement because another
// transaction on the row won: the lock went elsewhere.
const (
	errDeadlock          = 1213 // InnoDB deadlock; Galera's certification failure says the same
	errLockWaitTimeout   = 1205
	errGRCertification   = 3101 // Group Replication: the transaction was rolled back by certification
	errGaleraNotReady    = 1047 // WSREP has not yet prepared node for application use
	errReadOnlyInnoDB    = 1792
	errReadOnlyServer    = 1290
	errSuperReadOnlyNode = 1836
)

// errorNumber returns a MySQL server error's number, 0 for other errors,
// without importing the driver: go-sql-driver's *mysql.MySQLError has a Number
// field of type uint16.
func errorNumber(err error) uint16 {
	for ; err != nil; err = errors.Unwrap(err) {
		v := reflect.Indirect(reflect.ValueOf(err))
		if v.Kind() != reflect.Struct || v.Type().Name() != "MySQLError" {
			continue
		}
		if f := v.FieldByName("Number"); f.IsValid() && f.Kind() == reflect.Uint16 {
			return uint16(f.Uint())
		}
	}
	return 0
}

// conflictOrError turns an acquiring statement's error into its meaning: nil
// (not acquired) for a conflict that rolled it back, else the store error.
func conflictOrError(err error) error {
	switch errorNumber(err) {
	case errDeadlock, errLockWaitTimeout, errGRCertification:
		return nil
	}
	return nodeError(err)
}

// nodeError says what a server error means for locks where the driver's text
// does not.
func nodeError(err error) error {
	switch errorNumber(err) {
	case errGaleraNotReady:
		return fmt.Errorf("the Galera node is not ready for statements (not synced with the cluster, or "+
			"not in the primary component): connect to a synced node: %w", err)
	case errReadOnlyServer, errReadOnlyInnoDB, errSuperReadOnlyNode:
		return fmt.Errorf("%w: the server is read-only (a replica, or read_only set): locks can only be "+
			"taken on a primary: %w", lockerr.UnsafeStore, err)
	}
	return err
}
