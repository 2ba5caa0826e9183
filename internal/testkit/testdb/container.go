package testdb

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go/modules/mysql"
)

// startContainer starts MySQL 8 in Docker, for laptops with no local server. The
// container lives as long as the test binary (testcontainers' reaper removes it).
func startContainer() (string, error) {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return "", errors.New("no Docker engine (no DOCKER_HOST, no /var/run/docker.sock)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := mysql.Run(ctx, "mysql:8.0",
		mysql.WithDatabase("test"), mysql.WithUsername("root"), mysql.WithPassword("test"))
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx)
}
