package testdb

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

// startPostgresContainer starts PostgreSQL in Docker, for laptops with no local
// server. The container lives as long as the test binary (testcontainers'
// reaper removes it).
func startPostgresContainer() (string, error) {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return "", errors.New("no Docker engine (no DOCKER_HOST, no /var/run/docker.sock)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := postgres.Run(ctx, "postgres:16-alpine",
		postgres.WithDatabase("test"), postgres.WithUsername("root"), postgres.WithPassword("test"),
		postgres.BasicWaitStrategies())
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}
