package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock/shedlockredis"
)

const usage = `Usage: shedlock [flags] <command> [flags] [args]

Commands:
  list          the locks: name, whether held, time left, lock until, locked at, holder
  unlock NAME   free one lock; asks first when it is held, unless -force
  migrate       create the lock table if it does not exist (SQL stores)
  watch         list the locks again every -interval, until interrupted
  pause NAME    stop the job on every instance, until resumed or for -for
  resume NAME   end a pause
  run NAME      ask for one run of the job now, on whichever instance checks first
  serve         serve the dashboard (shedlockhttp) on -addr until interrupted: read-only,
                unless -token is set; then actions need it (a bearer header, or log in)

Flags (before or after the command):
  -dsn DSN      the store's data source name, as its Go driver takes it; $SHEDLOCK_DSN
                  mysql     user:password@tcp(host:3306)/database
                  postgres  postgres://user:password@host:5432/database
                  sqlite    a file path, opened read-write and never created except by migrate
                  redis     redis://:password@host:6379/0
                  etcd      etcd://host:2379,host:2379 (etcds:// for TLS, user:password@ if set)
  -store S      mysql (also MariaDB), postgres (pg), sqlite, redis or etcd; $SHEDLOCK_STORE,
                else told from -dsn: postgres:// or postgresql://, redis:// or rediss://, etcd://,
                file: or a path to a file (or ending in .db), else a MySQL DSN
  -table T      mysql, postgres, sqlite: the lock table; $SHEDLOCK_TABLE, else shedlock
  -env E        redis, etcd: the env of the keys, job-lock:<env>:<name> (shedlockredis.WithEnv),
                shedlock:<env>:<name> (shedlocketcd.WithEnv);
                $SHEDLOCK_ENV, else default
  -timeout D    limit on each command's work with the store (default 10s)
  -json         list: print JSON instead of a table
  -force        unlock: do not ask
  -interval D   watch: time between refreshes (default 2s)
  -for D        pause: how long (default: until resumed)
  -addr A       serve: the address to listen on (default 127.0.0.1:8080)
  -token T      serve: the secret that allows actions, at least 16 characters; $SHEDLOCK_TOKEN
                (safer than the flag, which other users can see in the process list)

Names and holders with characters a terminal would act on are shown quoted, as Go
quotes strings. Exit status: 0 done, 1 failed (store, table or lock), 2 bad usage
(a flag, a command or a malformed DSN).
`

// config is what the flags and the environment say.
type config struct {
	store, dsn, table, env string
	timeout                time.Duration
	json, force            bool
	interval               time.Duration
	pauseFor               time.Duration
	addr, token            string
	set                    map[string]bool // the flags given on the command line
	// open opens the store: openStore, or a test's.
	open func(ctx context.Context, c config, create bool) (*store, error)
}

// usageError is bad input on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run runs the command line args and returns the exit status. It reads answers
// from stdin and writes results to stdout, questions and errors to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, openStore, args, stdin, stdout, stderr)
}

// runWith is run with the stores opened by open.
func runWith(ctx context.Context, open func(context.Context, config, bool) (*store, error), args []string,
	stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, err := runCommand(ctx, open, args, stdin, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0
	}
	prefix := "shedlock"
	if cmd != "" {
		prefix += " " + cmd
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "%s: %s (shedlock -h shows the usage)\n", prefix, oneLine(err))
		return 2
	}
	fmt.Fprintf(stderr, "%s: %s\n", prefix, oneLine(err))
	return 1
}

// runCommand parses args and runs the command; it returns the command's name
// for messages.
func runCommand(ctx context.Context, open func(context.Context, config, bool) (*store, error), args []string,
	stdin io.Reader, stdout, stderr io.Writer) (string, error) {
	c := config{
		store:    os.Getenv("SHEDLOCK_STORE"),
		dsn:      os.Getenv("SHEDLOCK_DSN"),
		table:    envOr("SHEDLOCK_TABLE", "shedlock"),
		env:      envOr("SHEDLOCK_ENV", shedlockredis.DefaultEnv),
		timeout:  10 * time.Second,
		interval: 2 * time.Second,
		addr:     "127.0.0.1:8080",
		token:    os.Getenv("SHEDLOCK_TOKEN"),
		set:      map[string]bool{},
		open:     open,
	}
	global := c.flags("shedlock")
	if err := global.Parse(args); err != nil {
		return "", flagError(err)
	}
	global.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	if global.NArg() == 0 {
		return "", usageError{"no command: want " + commandNames}
	}
	name, rest := global.Arg(0), global.Args()[1:]
	commands := map[string]func(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error{
		"list": list, "unlock": unlock, "migrate": migrate, "watch": watch,
		"pause": pause, "resume": resume, "run": runNow, "serve": serve,
	}
	if name == "help" {
		return "", flag.ErrHelp
	}
	command, ok := commands[name]
	if !ok {
		return "", usageError{fmt.Sprintf("unknown command %q: want %s", name, commandNames)}
	}
	fs := c.flags(name)
	positional, err := parseInterspersed(fs, rest)
	if err != nil {
		return name, flagError(err)
	}
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	if err := c.check(); err != nil {
		return name, err
	}
	if err := commandArgs(name, positional); err != nil {
		return name, err
	}
	return name, command(ctx, c, positional, stdin, stdout, stderr)
}

// commandArgs refuses arguments the command name does not take: unlock,
// pause, resume and run take a lock's name, the others nothing.
func commandArgs(name string, args []string) error {
	switch name {
	case "unlock":
		if len(args) != 1 {
			return usageError{fmt.Sprintf("unlock takes one lock name, got %d arguments", len(args))}
		}
	case "pause", "resume", "run":
		if len(args) != 1 {
			return usageError{fmt.Sprintf("%s takes one job (lock) name, got %d arguments", name, len(args))}
		}
	default:
		if len(args) > 0 {
			return usageError{fmt.Sprintf("%s takes no arguments, got %q", name, args)}
		}
	}
	return nil
}

// flags returns a flag set that fills c; each command's set has them all, so
// that any flag may come before or after the command.
func (c *config) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line, usage on -h
	fs.StringVar(&c.store, "store", c.store, "")
	fs.StringVar(&c.dsn, "dsn", c.dsn, "")
	fs.StringVar(&c.table, "table", c.table, "")
	fs.StringVar(&c.env, "env", c.env, "")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "")
	fs.BoolVar(&c.json, "json", c.json, "")
	fs.BoolVar(&c.force, "force", c.force, "")
	fs.DurationVar(&c.interval, "interval", c.interval, "")
	fs.DurationVar(&c.pauseFor, "for", c.pauseFor, "")
	fs.StringVar(&c.addr, "addr", c.addr, "")
	fs.StringVar(&c.token, "token", c.token, "")
	return fs
}

// commandNames lists the commands, for messages.
const commandNames = "list, unlock, migrate, watch, pause, resume, run or serve"

// check validates c and settles its store, from -store or from the DSN.
func (c *config) check() error {
	switch {
	case c.dsn == "":
		return usageError{"no DSN: give -dsn or set SHEDLOCK_DSN"}
	case c.timeout <= 0:
		return usageError{fmt.Sprintf("-timeout %v: must be > 0", c.timeout)}
	case c.interval <= 0:
		return usageError{fmt.Sprintf("-interval %v: must be > 0", c.interval)}
	case c.set["for"] && c.pauseFor <= 0:
		return usageError{fmt.Sprintf("-for %v: must be > 0 (leave it out to pause until resumed)", c.pauseFor)}
	case c.token != "" && len(c.token) < minTokenLen:
		return usageError{fmt.Sprintf("-token: at least %d characters (or leave it out: the dashboard is then read-only)", minTokenLen)}
	}
	store, err := resolveStore(c.store, c.dsn)
	if err != nil {
		return err
	}
	c.store = store
	switch {
	case store == storeRedis && c.set["table"]:
		return usageError{"-table: Redis has no table; its locks are keys job-lock:<env>:<name> (-env)"}
	case store == storeEtcd && c.set["table"]:
		return usageError{"-table: etcd has no table; its locks are keys shedlock:<env>:<name> (-env)"}
	case !keyed(store) && c.set["env"]:
		return usageError{fmt.Sprintf("-env: only for redis and etcd; %s locks are in a table (-table)", store)}
	case keyed(store) && (c.env == "" || strings.Contains(c.env, ":")):
		return usageError{fmt.Sprintf("-env %q: must be non-empty and without ':'", c.env)}
	}
	return nil
}

// parseInterspersed parses flags that may stand between the positional
// arguments, as in "unlock NAME -force", and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err.Error()}
}

// oneLine is err's message on one line, its control characters escaped, and
// without the library's "shedlock: " prefixes: the command's own prefix
// replaces the first, and wrapped errors repeat it.
func oneLine(err error) string {
	msg := strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ", ": shedlock: ", ": ").Replace(err.Error())
	return sanitize(strings.TrimPrefix(msg, "shedlock: "))
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
