// Package kubeapiserver runs a real kube-apiserver for tests: built from the
// Go module proxy (k8s.io/kubernetes, every k8s.io module at one release: see
// the build module beside this file), the binary cached outside the
// repository by version, and started on loopback ports against a private etcd
// (Debian's etcd-server 3.4), with a token file of test users, RBAC, a
// service-account key pair and a serving certificate of its own. It speaks to
// the server over plain HTTPS, so that it needs no client-go.
package kubeapiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Version is the Kubernetes release the tests run: k8s.io/kubernetes at
// Version, and every k8s.io staging module at the matching v0.x (build/go.mod).
const Version = "v1.37.2"

// BinaryEnv names a kube-apiserver binary to use instead of the cached build.
const BinaryEnv = "SHEDLOCK_KUBE_APISERVER_BIN"

// ldflags strip the symbol table and debug information (a smaller binary, a
// shorter link), and stamp the version the server reports.
const ldflags = "-s -w -X k8s.io/component-base/version.gitVersion=" + Version +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

// buildDir returns the directory of the build module, beside this file.
func buildDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", errors.New("kubeapiserver: cannot find the build module (built with -trimpath?): set " + BinaryEnv)
	}
	return filepath.Join(filepath.Dir(file), "build"), nil
}

// CacheDir is where built binaries are kept: $SHEDLOCK_KUBE_CACHE, else
// shedlock-kube in the user's cache directory (~/.cache/shedlock-kube).
func CacheDir() (string, error) {
	if d := os.Getenv("SHEDLOCK_KUBE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kubeapiserver: %w", err)
	}
	return filepath.Join(d, "shedlock-kube"), nil
}

// CachedPath returns where the binary of this build module is cached: its
// name carries Version and a hash of the build module's go.mod and go.sum and
// of the link flags, so that a change of any builds anew.
func CachedPath() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(ldflags))
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("kubeapiserver: %w", err)
		}
		h.Write(b)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "kube-apiserver-"+Version+"-"+hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// Binary returns a kube-apiserver binary: $SHEDLOCK_KUBE_APISERVER_BIN, else
// the cached build, built first if it is not there (several minutes on two
// cores; concurrent callers, in other processes too, wait for one build).
func Binary(ctx context.Context) (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		return bin, nil
	}
	path, err := CachedPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, Build(ctx, path)
}

// Build builds kube-apiserver into path unless it is there, holding a lock
// file beside it so that one process builds while the others wait. The go
// command is $GO, else go; the build's output goes to path + ".log".
func Build(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kubeapiserver: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		return nil // built while this process waited
	}
	dir, err := buildDir()
	if err != nil {
		return err
	}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	logPath := path + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("kubeapiserver: %w", err)
	}
	defer logf.Close()
	tmp := path + ".tmp"
	start := time.Now()
	// Built as the tests build their packages (cgo as the machine has it, no
	// -trimpath), so that client-go and apimachinery, compiled once, serve
	// both: on a fresh machine that is minutes of CPU.
	cmd := exec.CommandContext(ctx, goCmd, "build", "-ldflags", ldflags, "-o", tmp, "k8s.io/kubernetes/cmd/kube-apiserver")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("kubeapiserver: build kube-apiserver %s in %s: %w\n%s", Version, dir, err, log)
	}
	fmt.Fprintf(logf, "built in %v\n", time.Since(start).Round(time.Second))
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("kubeapiserver: %w", err)
	}
	return nil
}

// lockFile takes an exclusive lock on path, waiting for another holder.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubeapiserver: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kubeapiserver: lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
