package privatedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// galeraLibraries are where Debian's galera-4 package puts the provider.
var galeraLibraries = []string{"/usr/lib/galera/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so",
	"/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so"}

// galeraStartTimeout bounds the start of a node: rsync SST of a fresh node took
// 4-5 s here and donors serve one joiner at a time.
const galeraStartTimeout = 90 * time.Second

// Galera is a private MariaDB Galera cluster: every node a mariadbd of its own on
// 127.0.0.1 with distinct SQL, gcomm, IST and SST ports and a data directory
// under one temporary directory. Nodes run as the mysql user when the tests run
// as root (rsync SST fails under root). New nodes join by rsync SST; a node
// that was killed recovers its position first and catches up by IST.
//
// Failure detection is tightened (a node that stops answering is evicted after
// about 1 s instead of 5 s), so that a killed node stalls the others' commits
// for about 2 s.
type Galera struct {
	dir     string // owns one directory per node
	logs    string // where Close leaves each node's error log; "" for nowhere
	as      sysUser
	mariadb string // mariadbd
	lib     string // libgalera_smm.so
	name    string // wsrep_cluster_name
	nodes   []*galeraNode
}

type galeraNode struct {
	name                 string
	dir                  string
	sql, gcomm, ist, sst int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error // receives the exit of cmd
}

// StartGalera installs and starts a cluster of n nodes and returns once every
// node reports Synced in a cluster of n. Node 0 bootstraps the cluster (with
// --wsrep-new-cluster) and database test is created on it. logs, if not empty,
// is where Close leaves each node's error log.
//
// It needs Debian's mariadb-server (mariadbd, mariadb-install-db,
// wsrep_sst_rsync), galera-4 (libgalera_smm.so) and rsync; what is missing is
// named in the error.
func StartGalera(ctx context.Context, logs string, n int) (*Galera, error) {
	if n < 1 {
		return nil, errors.New("privatedb: a Galera cluster needs at least one node")
	}
	g := &Galera{logs: logs, name: "privatedb-" + strconv.Itoa(os.Getpid())}
	if err := g.findBinaries(); err != nil {
		return nil, err
	}
	as, err := lookupSysUser("mysql", "mariadb-server")
	if err != nil {
		return nil, err
	}
	g.as = as
	ports, err := FreePorts(4 * n)
	if err != nil {
		return nil, err
	}
	if g.dir, err = as.mkdirOwned("privatedb-galera-"); err != nil {
		return nil, err
	}
	for i := range n {
		node := &galeraNode{name: "node" + strconv.Itoa(i), sql: ports[4*i], gcomm: ports[4*i+1],
			ist: ports[4*i+2], sst: ports[4*i+3]}
		node.dir = filepath.Join(g.dir, node.name)
		if err := os.MkdirAll(filepath.Join(node.dir, "data"), 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("privatedb: %w", err), os.RemoveAll(g.dir))
		}
		g.nodes = append(g.nodes, node)
	}
	if err := as.chownAll(g.dir); err != nil {
		return nil, errors.Join(err, os.RemoveAll(g.dir))
	}
	if err := g.start(ctx); err != nil {
		return nil, errors.Join(err, g.Close())
	}
	return g, nil
}

// findBinaries finds what the cluster needs, naming the Debian package of
// whatever is missing.
func (g *Galera) findBinaries() error {
	var missing []string
	var err error
	if g.mariadb, err = lookPath("mariadbd"); err != nil {
		missing = append(missing, "mariadb-server (mariadbd)")
	}
	if _, err := lookPath("mariadb-install-db"); err != nil {
		missing = append(missing, "mariadb-server (mariadb-install-db)")
	}
	if _, err := exec.LookPath("wsrep_sst_rsync"); err != nil {
		missing = append(missing, "mariadb-server (wsrep_sst_rsync)")
	}
	for _, lib := range galeraLibraries {
		if fileExists(lib) {
			g.lib = lib
			break
		}
	}
	if g.lib == "" {
		missing = append(missing, "galera-4 (libgalera_smm.so in /usr/lib/galera)")
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		missing = append(missing, "rsync")
	}
	if len(missing) > 0 {
		return fmt.Errorf("privatedb: a Galera cluster needs Debian's packages %s: apt-get install galera-4 mariadb-server rsync",
			strings.Join(missing, ", "))
	}
	return nil
}

// start installs node 0, bootstraps the cluster on it, then starts the other
// nodes together: they join by SST, one donor serving one joiner at a time.
func (g *Galera) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, galeraStartTimeout)
	defer cancel()
	install, err := lookPath("mariadb-install-db")
	if err != nil {
		return err
	}
	first := g.nodes[0]
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(first.dir, "data"), "--user=" + g.userName(),
		"--auth-root-authentication-method=normal", "--skip-test-db"}
	if out, err := exec.CommandContext(ctx, install, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("privatedb: mariadb-install-db: %w\n%s", err, out)
	}
	if err := g.launch(first, true); err != nil {
		return err
	}
	if err := g.waitSynced(ctx, first, 1); err != nil {
		return err
	}
	db, err := sql.Open("mysql", g.dsn(first, ""))
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test")
	_ = db.Close()
	if err != nil {
		return fmt.Errorf("privatedb: create database test on %s: %w", first.name, err)
	}
	for _, node := range g.nodes[1:] {
		if err := g.launch(node, false); err != nil {
			return err
		}
	}
	return g.WaitSynced(ctx)
}

func (g *Galera) userName() string {
	if g.as.cred != nil {
		return "mysql"
	}
	return currentUser()
}

// launch starts node's mariadbd; it does not wait for it.
func (g *Galera) launch(node *galeraNode, bootstrap bool, extra ...string) error {
	provider := strings.Join([]string{
		"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(node.gcomm),
		"ist.recv_addr=127.0.0.1:" + strconv.Itoa(node.ist),
		"gcache.size=32M",
		// A SIGKILLed node is evicted after ~2 s instead of ~5 s, so the others'
		// commits stall for less; shorter timeouts split the cluster when the
		// machine is busy.
		"evs.keepalive_period=PT0.3S", "evs.inactive_check_period=PT0.3S",
		"evs.suspect_timeout=PT2S", "evs.inactive_timeout=PT4S", "evs.install_timeout=PT4S",
	}, ";")
	args := []string{"--no-defaults", "--user=" + g.userName(),
		"--datadir=" + filepath.Join(node.dir, "data"), "--port=" + strconv.Itoa(node.sql),
		"--bind-address=127.0.0.1", "--socket=" + filepath.Join(node.dir, "mariadbd.sock"),
		"--pid-file=" + filepath.Join(node.dir, "mariadbd.pid"), "--log-error=" + filepath.Join(node.dir, "error.log"),
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M", "--max-connections=500",
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--default-storage-engine=InnoDB",
		"--wsrep-on=ON", "--wsrep-provider=" + g.lib, "--wsrep-cluster-name=" + g.name,
		"--wsrep-cluster-address=" + g.clusterAddress(),
		"--wsrep-node-address=127.0.0.1:" + strconv.Itoa(node.gcomm), "--wsrep-node-name=" + node.name,
		"--wsrep-provider-options=" + provider,
		"--wsrep-sst-receive-address=127.0.0.1:" + strconv.Itoa(node.sst), "--wsrep-sst-method=rsync",
	}
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	args = append(args, extra...)
	cmd := g.as.command(g.mariadb, args...)
	// The error log has it all; what mariadbd prints before opening it goes here.
	out, err := os.OpenFile(filepath.Join(g.dir, node.name+".out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("privatedb: start %s: %w", node.name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); out.Close() }()
	node.mu.Lock()
	node.cmd, node.done = cmd, done
	node.mu.Unlock()
	return nil
}

// clusterAddress is every node's gcomm address.
func (g *Galera) clusterAddress() string {
	peers := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		peers[i] = "127.0.0.1:" + strconv.Itoa(n.gcomm)
	}
	return "gcomm://" + strings.Join(peers, ",")
}

// Size returns the number of nodes.
func (g *Galera) Size() int { return len(g.nodes) }

// DSN returns the go-sql-driver/mysql DSN of database test on node i (root, no
// password).
func (g *Galera) DSN(i int) string { return g.dsn(g.nodes[i], "test") }

func (g *Galera) dsn(node *galeraNode, db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", node.sql, db)
}

// WaitSynced returns once every node reports wsrep_local_state_comment Synced
// and wsrep_ready ON in a primary component of all the nodes.
func (g *Galera) WaitSynced(ctx context.Context) error {
	for _, node := range g.nodes {
		if err := g.waitSynced(ctx, node, len(g.nodes)); err != nil {
			return err
		}
	}
	return nil
}

// waitSynced polls node until it is Synced in a primary component of size
// nodes, its process exits, or ctx (bounded by galeraStartTimeout) ends.
func (g *Galera) waitSynced(ctx context.Context, node *galeraNode, size int) error {
	ctx, cancel := context.WithTimeout(ctx, galeraStartTimeout)
	defer cancel()
	db, err := sql.Open("mysql", g.dsn(node, "")+"?timeout=1s")
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	defer db.Close()
	node.mu.Lock()
	done := node.done
	node.mu.Unlock()
	var last string
	for {
		state, err := galeraState(ctx, db)
		if err == nil {
			last = fmt.Sprintf("%s, ready %s, cluster %s of size %s", state["wsrep_local_state_comment"],
				state["wsrep_ready"], state["wsrep_cluster_status"], state["wsrep_cluster_size"])
			if state["wsrep_local_state_comment"] == "Synced" && state["wsrep_ready"] == "ON" &&
				state["wsrep_cluster_status"] == "Primary" && state["wsrep_cluster_size"] == strconv.Itoa(size) {
				return nil
			}
		} else {
			last = err.Error()
		}
		select {
		case exitErr := <-done:
			done <- exitErr // for Kill and Close
			return fmt.Errorf("privatedb: Galera %s exited before it was Synced (see %s): %v",
				node.name, filepath.Join(node.dir, "error.log"), exitErr)
		case <-ctx.Done():
			return fmt.Errorf("privatedb: Galera %s not Synced in a cluster of %d: %s: %w (see %s)",
				node.name, size, last, ctx.Err(), filepath.Join(node.dir, "error.log"))
		case <-time.After(100 * time.Millisecond): // poll interval
		}
	}
}

func galeraState(ctx context.Context, db *sql.DB) (map[string]string, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := db.QueryContext(qctx, "SHOW GLOBAL STATUS WHERE Variable_name IN "+
		"('wsrep_local_state_comment', 'wsrep_ready', 'wsrep_cluster_status', 'wsrep_cluster_size')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	state := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		state[strings.ToLower(k)] = v
	}
	return state, rows.Err()
}

// Kill sends SIGKILL to node i's mariadbd, as a crash would, and waits for it
// to exit. The other nodes evict it within about 2 s.
func (g *Galera) Kill(i int) error {
	node := g.nodes[i]
	node.mu.Lock()
	cmd, done := node.cmd, node.done
	node.cmd = nil
	node.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("privatedb: Galera %s is not running", node.name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("privatedb: kill %s: %w", node.name, err)
	}
	<-done
	return nil
}

// Rejoin starts node i again on its data directory (after Kill) and returns
// once every node is Synced in a cluster of all the nodes.
func (g *Galera) Rejoin(ctx context.Context, i int) error {
	node := g.nodes[i]
	node.mu.Lock()
	running := node.cmd != nil
	node.mu.Unlock()
	if running {
		return fmt.Errorf("privatedb: Galera %s is running", node.name)
	}
	// As Debian's galera_recovery does before a start: after a crash the node's
	// grastate.dat has no position; recovered from InnoDB, the node catches up
	// by IST (the others' gcache) instead of a full SST.
	pos, err := g.recoverPosition(ctx, node)
	if err != nil {
		return err
	}
	if err := g.launch(node, false, "--wsrep-start-position="+pos); err != nil {
		return err
	}
	return g.WaitSynced(ctx)
}

// recoveredPosition is how mariadbd --wsrep-recover reports the last committed
// write set: "WSREP: Recovered position: <uuid>:<seqno>".
var recoveredPosition = regexp.MustCompile(`WSREP: Recovered position: (\S+)`)

// recoverPosition runs mariadbd --wsrep-recover on node's data directory and
// returns the position it found.
func (g *Galera) recoverPosition(ctx context.Context, node *galeraNode) (string, error) {
	log := filepath.Join(node.dir, "recover.log")
	_ = os.Remove(log)
	ctx, cancel := context.WithTimeout(ctx, galeraStartTimeout)
	defer cancel()
	cmd := g.as.commandContext(ctx, g.mariadb, "--no-defaults", "--user="+g.userName(), "--datadir="+filepath.Join(node.dir, "data"),
		"--socket="+filepath.Join(node.dir, "recover.sock"), "--pid-file="+filepath.Join(node.dir, "recover.pid"),
		"--skip-networking", "--log-error="+log, "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
		"--binlog-format=ROW", "--wsrep-on=ON", "--wsrep-provider="+g.lib,
		"--wsrep-cluster-address="+g.clusterAddress(), "--wsrep-sst-method=rsync", "--wsrep-recover")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("privatedb: mariadbd --wsrep-recover on %s: %w\n%s", node.name, err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return "", fmt.Errorf("privatedb: %w", err)
	}
	m := recoveredPosition.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("privatedb: mariadbd --wsrep-recover on %s reported no position (see %s)", node.name, log)
	}
	return string(m[1]), nil
}

// Close stops every node (SIGTERM, then SIGKILL to its process group after
// 20 s), leaves their error logs in the directory given to StartGalera, and
// deletes the rest.
func (g *Galera) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(g.nodes))
	for i, node := range g.nodes {
		wg.Go(func() { errs[i] = node.stop() })
	}
	wg.Wait()
	if g.logs != "" {
		for _, node := range g.nodes {
			b, err := os.ReadFile(filepath.Join(node.dir, "error.log"))
			if err == nil {
				err = os.WriteFile(filepath.Join(g.logs, "galera-"+node.name+".log"), b, 0o644)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("privatedb: keep %s's log: %w", node.name, err))
			}
		}
	}
	return errors.Join(append(errs, os.RemoveAll(g.dir))...)
}

func (n *galeraNode) stop() error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("privatedb: Galera %s did not stop within 20s; killed", n.name)
	}
}
