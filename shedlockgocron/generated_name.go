package shedlockgocron

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock"
)

// checkName refuses a job name that gocron made from a closure. A job without
// gocron.WithName is named after its function (runtime.FuncForPC), and a
// closure's name counts the closures before it in the enclosing function
// (main.main.func24.1): it changes when the code around it changes, so old
// and new pods of a rolling deploy would take different locks and run the job
// at once. A Locker first sees a job's name at its first run (gocron tells it
// nothing at registration), so the refusal comes then: the run is skipped and
// logged at error level, every run, until the job is named.
//
// A named function's or method's name is kept: it changes only when renamed.
// Whatever a user gives to WithName is theirs, unless it has a closure's form.
func checkName(name string) error {
	if !isClosureName(name) {
		return nil
	}
	return fmt.Errorf("%w: job %q: gocron named the job after its function, a closure, whose name changes "+
		"whenever the code around it does, so old and new pods of a rolling deploy would take different "+
		"locks and run it at once: name the job with gocron.WithName", shedlock.ErrInvalidConfig, name)
}

// isClosureName reports a Go closure's symbol name: a last element "funcN",
// then any ".M" of closures nested in it (outer.func24.1).
func isClosureName(name string) bool {
	i := strings.LastIndex(name, ".func")
	if i < 0 {
		return false
	}
	rest := name[i+len(".func"):]
	if rest == "" || strings.Trim(rest, "0123456789.") != "" || rest[0] == '.' ||
		strings.HasSuffix(rest, ".") || strings.Contains(rest, "..") {
		return false
	}
	return true
}
