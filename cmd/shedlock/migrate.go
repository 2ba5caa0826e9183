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
	s, err := openStore(c, true)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := s.EnsureTable(ctx); err != nil {
		return err
	}
	if err := s.HealthCheck(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "table %s is ready (%s)\n", c.table, c.store)
	return err
}
