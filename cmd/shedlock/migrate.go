package main

import (
	"context"
	"fmt"
	"io"
)

// migrate creates the lock table if it does not exist, and checks it.
func migrate(ctx context.Context, c config, args []string, _ io.Reader, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("migrate takes no arguments, got %q", args)}
	}
	switch c.store {
	case storeRedis:
		return usageError{"migrate: Redis needs no table; its locks are keys job-lock:<env>:<name>"}
	case storeEtcd:
		return usageError{"migrate: etcd needs no table; its locks are keys shedlock:<env>:<name>"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := openStore(ctx, c, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s is ready (%s)\n", s.Where(), c.store)
	return err
}
