package integration_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const rootModule = "github.com/shedlock-go/shedlock"

// consumerGoVersion is the go line of the consumer module; importing the root
// package must not raise it.
const consumerGoVersion = "1.24"

// maxConsumerGoSumLines is what a service may pay in go.sum lines for importing
// the root package.
const maxConsumerGoSumLines = 10

// TestConsumerImportCost measures what a service pays for importing the root
// package: a fresh module that imports only it is tidied outside the workspace,
// as a service would be, and must get at most maxConsumerGoSumLines go.sum lines,
// keep its own go line, and depend on no module outside this one and robfig/cron.
// It needs the Go module proxy (or a module cache that holds robfig/cron).
func TestConsumerImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestConsumerImportCost needs the Go module proxy")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module consumer\n\ngo "+consumerGoVersion+"\n\n"+
		"require "+rootModule+" v0.0.0\n\nreplace "+rootModule+" => "+root+"\n")
	writeFile(t, filepath.Join(dir, "main.go"), `package main

import (
	"fmt"

	"github.com/shedlock-go/shedlock"
)

func main() {
	fmt.Println(shedlock.LockConfig{Name: "job"}.Validate())
}
`)

	goCmd(t, dir, "mod", "tidy")

	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	require.NoError(t, err)
	sumLines := strings.Split(strings.TrimSpace(string(sum)), "\n")
	t.Logf("consumer go.sum: %d lines\n%s", len(sumLines), sum)
	require.LessOrEqual(t, len(sumLines), maxConsumerGoSumLines, "go.sum lines of a module importing only %s", rootModule)

	mod := readGoMod(t, dir, filepath.Join(dir, "go.mod"))
	require.Equal(t, consumerGoVersion, mod.Go, "the consumer's go line after go mod tidy")
	require.Nil(t, mod.Toolchain, "go mod tidy added a toolchain line to the consumer")

	var foreign []string
	for _, pkg := range strings.Fields(goCmd(t, dir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")) {
		if pkg != "consumer" && pkg != rootModule && !strings.HasPrefix(pkg, rootModule+"/") && !strings.HasPrefix(pkg, "github.com/robfig/cron/v3") {
			foreign = append(foreign, pkg)
		}
	}
	require.Empty(t, foreign, "packages linked into the consumer besides %s and robfig/cron", rootModule)

	rootMod := readGoMod(t, dir, filepath.Join(root, "go.mod"))
	var requires []string
	for _, r := range rootMod.Require {
		requires = append(requires, r.Path)
	}
	require.Equal(t, []string{"github.com/robfig/cron/v3"}, requires, "modules the root go.mod requires")
	require.Regexp(t, regexp.MustCompile(`^1\.\d+$`), rootMod.Go, "the root go line: the oldest Go the code needs, with no patch pin")
}

// goModFile is the part of `go mod edit -json` the test reads.
type goModFile struct {
	Go        string
	Toolchain *struct{ Name string }
	Require   []struct {
		Path     string
		Version  string
		Indirect bool
	}
}

func readGoMod(t *testing.T, dir, path string) goModFile {
	t.Helper()
	var mod goModFile
	require.NoError(t, json.Unmarshal([]byte(goCmd(t, dir, "mod", "edit", "-json", path)), &mod), "go mod edit -json %s", path)
	return mod
}

// goCmd runs the go command in dir as a service outside the workspace would,
// and returns its standard output.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "go %s in %s\n%s", strings.Join(args, " "), dir, stderr.String())
	return stdout.String()
}

// repoRoot is the directory of the root module, found upwards from the test's
// working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			regexp.MustCompile(`(?m)^module\s+`+regexp.QuoteMeta(rootModule)+`\s*$`).Match(mod) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod of %s above the working directory", rootModule)
		dir = parent
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
