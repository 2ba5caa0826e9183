package privatedb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// sysUser is the account a server runs as: servers that refuse root (pgbouncer)
// or whose helpers fail under root (Galera's rsync SST drops to nobody) run as a
// system user when the tests run as root, and as the tests' own user otherwise.
type sysUser struct {
	cred     *syscall.Credential // nil: the tests' own user
	uid, gid int
}

// lookupSysUser returns the system user name when running as root, else the
// current user. pkg names the Debian package that creates name.
func lookupSysUser(name, pkg string) (sysUser, error) {
	if os.Geteuid() != 0 {
		return sysUser{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return sysUser{}, fmt.Errorf("privatedb: running as root, the server must run as the %s user, "+
			"which Debian's %s package creates: %w", name, pkg, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return sysUser{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid: uid, gid: gid}, nil
}

// mkdirOwned makes a directory under the system's temporary directory that u
// owns and that the tests' user (root, or u itself) can read.
func (u sysUser) mkdirOwned(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("privatedb: %w", err)
	}
	if err := u.chownAll(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// chownAll gives dir and everything under it to u.
func (u sysUser) chownAll(dir string) error {
	if u.cred == nil {
		return nil
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	})
	if err != nil {
		return fmt.Errorf("privatedb: chown %s: %w", dir, err)
	}
	return nil
}

// command returns cmd set to run as u, in a process group of its own, and to
// be killed if the test binary dies first: a crashed test run must not leave
// servers behind on ports the next run would pick.
func (u sysUser) command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: u.cred}
	return cmd
}

// commandContext is command for a run that ends with ctx: a server's tool,
// not the server.
func (u sysUser) commandContext(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: u.cred}
	return cmd
}
