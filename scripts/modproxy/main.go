// Command modproxy writes a file-based Go module proxy (GOPROXY=file://DIR)
// holding the modules of a git repository as its tags make them: for a module
// in directory d (relative to the repository root) and version v, the tag is v
// for the root module and d/v for the others, and the zip is what a public
// proxy would serve for it (x/mod/zip.CreateFromVCS: the files of the tagged
// tree, no nested module, the repository's LICENSE where the module has none).
// With -rev, every module is taken from that revision instead of its tag.
// scripts/release uses it to record the checksums of a release in its go.sum
// files before tagging it; scripts/check-release, to install a release that
// was never published.
//
//	go run ./scripts/modproxy -repo . -out /tmp/proxy -version v0.1.0 . shedlockredis cmd/shedlock
package main

import (
	stdzip "archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the git repository")
	out := flag.String("out", "", "the proxy's directory (created; versions already in it are kept)")
	version := flag.String("version", "", "the version to serve, vX.Y.Z")
	rev := flag.String("rev", "", "take every module from this revision, not from its tag")
	needLicense := flag.Bool("license", false, "fail when a module's zip has no LICENSE")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -repo DIR -out DIR -version vX.Y.Z [-rev REV] MODULE-DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || !semver.IsValid(*version) || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		p, err := write(*repo, *out, path.Clean(filepath.ToSlash(dir)), *version, *rev, *needLicense)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s\n", p, *version)
	}
}

// write adds the module in dir at version to the proxy in out, from revision
// rev or else from the module's tag, and returns the module's path.
func write(repo, out, dir, version, rev string, needLicense bool) (string, error) {
	tag := version
	subdir := ""
	if dir != "." {
		tag, subdir = dir+"/"+version, dir
	}
	if rev == "" {
		rev = tag
	}
	rev, err := git(repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("no revision %s: %w", rev, err)
	}
	rev = strings.TrimSpace(rev)
	gomod, err := git(repo, "cat-file", "blob", rev+":"+path.Join(subdir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("no go.mod at %s: %w", rev, err)
	}
	modPath := modfile.ModulePath([]byte(gomod))
	if modPath == "" {
		return "", fmt.Errorf("go.mod at %s has no module line", rev)
	}
	when, err := git(repo, "log", "-1", "--format=%ct", rev)
	if err != nil {
		return "", err
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(when), 10, 64)
	if err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	var z bytes.Buffer
	m := module.Version{Path: modPath, Version: version}
	absRepo, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	if err := zip.CreateFromVCS(&z, m, absRepo, rev, subdir); err != nil {
		return "", fmt.Errorf("zip: %w", err)
	}
	if needLicense {
		if err := hasLicense(z.Bytes(), m); err != nil {
			return "", err
		}
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Unix(secs, 0).UTC()})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		version + ".zip":  z.Bytes(),
		version + ".mod":  []byte(gomod),
		version + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return modPath, addToList(filepath.Join(vdir, "list"), version)
}

// hasLicense reports an error unless the module's zip has a LICENSE at its root.
func hasLicense(data []byte, m module.Version) error {
	r, err := stdzip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, f := range r.File {
		if f.Name == m.Path+"@"+m.Version+"/LICENSE" {
			return nil
		}
	}
	return fmt.Errorf("%s@%s has no LICENSE: pkg.go.dev would show no documentation", m.Path, m.Version)
}

// addToList adds version to the proxy's list of the module's versions.
func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, v := range strings.Fields(string(data)) {
		if v == version {
			return nil
		}
	}
	f, err := os.OpenFile(list, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, version); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
