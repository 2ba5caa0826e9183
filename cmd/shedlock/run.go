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
)

const usage = `Usage: shedlock [flags] <command> [flags] [args]

Commands:
  list          the locks: name, whether held, time left, lock until, locked at, holder
  unlock NAME   free one lock; asks first when it is held, unless -force
  migrate       create the lock table if it does not exist
  watch         list the locks again every -interval, until interrupted

Flags (before or after the command):
  -store S      mysql (also MariaDB), postgres or sqlite; $SHEDLOCK_STORE, else mysql
  -dsn DSN      the store's data source name, as its Go driver takes it; $SHEDLOCK_DSN
                (sqlite: a file path, opened read-write and never created except by migrate)
  -table T      the lock table; $SHEDLOCK_TABLE, else shedlock
  -timeout D    limit on each command's work with the store (default 10s)
  -json         list: print JSON instead of a table
  -force        unlock: do not ask
  -interval D   watch: time between refreshes (default 2s)

Exit status: 0 done, 1 failed (store, table or lock), 2 bad usage.
`

// config is what the flags and the environment say.
type config struct {
	store, dsn, table string
	timeout           time.Duration
	json, force       bool
	interval          time.Duration
}

// usageError is bad input on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run runs the command line args and returns the exit status. It reads answers
// from stdin and writes results to stdout, questions and errors to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd, err := runCommand(ctx, args, stdin, stdout, stderr)
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
func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (string, error) {
	c := config{
		store:    envOr("SHEDLOCK_STORE", "mysql"),
		dsn:      os.Getenv("SHEDLOCK_DSN"),
		table:    envOr("SHEDLOCK_TABLE", "shedlock"),
		timeout:  10 * time.Second,
		interval: 2 * time.Second,
	}
	global := c.flags("shedlock")
	if err := global.Parse(args); err != nil {
		return "", flagError(err)
	}
	if global.NArg() == 0 {
		return "", usageError{"no command: want list, unlock, migrate or watch"}
	}
	name, rest := global.Arg(0), global.Args()[1:]
	commands := map[string]func(ctx context.Context, c config, args []string, stdin io.Reader, stdout, stderr io.Writer) error{
		"list": list, "unlock": unlock, "migrate": migrate, "watch": watch,
	}
	if name == "help" {
		return "", flag.ErrHelp
	}
	command, ok := commands[name]
	if !ok {
		return "", usageError{fmt.Sprintf("unknown command %q: want list, unlock, migrate or watch", name)}
	}
	fs := c.flags(name)
	positional, err := parseInterspersed(fs, rest)
	if err != nil {
		return name, flagError(err)
	}
	if err := c.check(); err != nil {
		return name, err
	}
	return name, command(ctx, c, positional, stdin, stdout, stderr)
}

// flags returns a flag set that fills c; each command's set has them all, so
// that any flag may come before or after the command.
func (c *config) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line, usage on -h
	fs.StringVar(&c.store, "store", c.store, "")
	fs.StringVar(&c.dsn, "dsn", c.dsn, "")
	fs.StringVar(&c.table, "table", c.table, "")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "")
	fs.BoolVar(&c.json, "json", c.json, "")
	fs.BoolVar(&c.force, "force", c.force, "")
	fs.DurationVar(&c.interval, "interval", c.interval, "")
	return fs
}

func (c config) check() error {
	switch {
	case c.dsn == "":
		return usageError{"no DSN: give -dsn or set SHEDLOCK_DSN"}
	case c.timeout <= 0:
		return usageError{fmt.Sprintf("-timeout %v: must be > 0", c.timeout)}
	case c.interval <= 0:
		return usageError{fmt.Sprintf("-interval %v: must be > 0", c.interval)}
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

// oneLine is err's message on one line, without the library's "shedlock: "
// prefix, which the command's own prefix replaces.
func oneLine(err error) string {
	msg := strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ").Replace(err.Error())
	return strings.TrimPrefix(msg, "shedlock: ")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
