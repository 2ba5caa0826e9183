package shedlock

import (
	"fmt"
	"strings"
	"unicode"
)

// storeKey returns the one form of name that every name the stores may keep in
// the same row shares. MySQL's default collations ignore case, accents and
// trailing spaces (PAD SPACE), and utf8mb4_general_ci weighs every character
// outside the Basic Multilingual Plane (every emoji) alike: "job", "JOB", "jöb"
// and "job " are one row, so they are one name to the executor too. Case is
// folded as strings.EqualFold folds it.
func storeKey(name string) string {
	return strings.Map(func(r rune) rune { return foldRune(baseLetter(r)) }, strings.TrimRight(name, " "))
}

// latinBases holds, for U+00C0 to U+024F, the ASCII letter each accented Latin
// letter decomposes to (its canonical decomposition's first rune), '.' where
// there is none.
const latinBases = "AAAAAA.CEEEEIIII.NOOOOO..UUUUY..aaaaaa.ceeeeiiii.nooooo..uuuuy.yAaAaAaCcCcCcCcDd..EeEeEeEeEeGgGgGgGgHh..IiIiIiIiI...JjKk.LlLlLl....NnNnNn...OoOoOo..RrRrRrSsSsSsSsTtTt..UuUuUuUuUuUuWwYyYZzZzZz.................................Oo.............Uu............................AaIiOoUuUuUuUuUu.AaAa....GgKkOoOo..j...Gg..NnAa....AaAaEeEeIiIiOoOoRrRrUuUuSsTt..Hh......AaEeOoOoOoOoYy............................"

// baseLetter maps an accented Latin letter to its base letter, and a character
// outside the Basic Multilingual Plane to U+FFFD.
func baseLetter(r rune) rune {
	switch {
	case r >= 0xC0 && r < 0xC0+rune(len(latinBases)) && latinBases[r-0xC0] != '.':
		return rune(latinBases[r-0xC0])
	case r > 0xFFFF:
		return 0xFFFD
	}
	return r
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
		return fmt.Errorf("%w: %q is %q to the store (names differing only by case, accents, emoji or trailing spaces are one lock)",
			ErrDuplicateName, name, first)
	}
	e.names[key] = name
	return nil
}
