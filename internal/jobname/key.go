// Package jobname gives the form under which lock names are one row to the
// stores, so that an executor refuses two jobs that would share a lock.
package jobname

import (
	"strings"
	"unicode"
)

// Key returns the one form of name that every name the stores may keep in
// the same row shares. MySQL's default collations ignore case, accents and
// trailing spaces (PAD SPACE), and utf8mb4_general_ci weighs every character
// outside the Basic Multilingual Plane (every emoji) alike: "job", "JOB", "jöb"
// and "job " are one row, so they are one name to the executor too. Case is
// folded as strings.EqualFold folds it.
func Key(name string) string {
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
