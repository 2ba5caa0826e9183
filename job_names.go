package shedlock

import (
	"fmt"
	"strings"
	"unicode"
)

// storeKey returns the one form of name that every name the stores may keep in
// the same row shares. MySQL's default collations ignore case and trailing
// spaces (PAD SPACE): "job", "JOB" and "job " are one row, so they are one name
// to the executor too. Case is folded as strings.EqualFold folds it.
func storeKey(name string) string {
	return strings.Map(foldRune, strings.TrimRight(name, " "))
}

// foldRune maps r to the smallest rune of its simple case-folding orbit, so two
// runes strings.EqualFold takes as equal map to the same rune.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// registerLocked claims name for one job, unless the executor has stopped. e.mu
// must be held.
func (e *Executor) registerLocked(name string) error {
	if e.stopped {
		return fmt.Errorf("%w: lock %q: registered after Stop", ErrStopped, name)
	}
	key := storeKey(name)
	if first, ok := e.names[key]; ok {
		if first == name {
			return fmt.Errorf("%w: %q", ErrDuplicateName, name)
		}
		return fmt.Errorf("%w: %q is %q to the store (names differing only by case or trailing spaces are one lock)",
			ErrDuplicateName, name, first)
	}
	e.names[key] = name
	return nil
}
