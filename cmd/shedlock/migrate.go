package main

import (
	"context"
	"fmt"
	"io"
)

// migrate creates the lock table if it does not exist (EnsureTable), and
// checks that the store takes locks (HealthCheck).
func migrate(ctx context.Context, c config, _ []string, _ io.Reader, stdout, _ io.Writer) error {
	if why := storeKinds()[c.store].noTable; why != "" {
		return usageError{"migrate: " + why}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.open(ctx, c, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.EnsureTable(ctx); err != nil {
		return err
	}
	if err := s.HealthCheck(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s is ready (%s)\n", s.where, c.store)
	return err
}
