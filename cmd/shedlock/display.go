package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// display returns s as the command prints a name or a holder: as it is when
// every rune is printable, else quoted and escaped as Go does. The values come
// from the lock table, which any client of the database can write: a raw
// carriage return or escape sequence could rewrite the terminal's line, and
// make a prompt name a holder other than the one it will free.
func display(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return s
}

func needsQuote(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if !strconv.IsPrint(r) || r == '"' || r == '\\' {
			return true
		}
	}
	return false
}

// sanitize escapes the runes of a message that a terminal would act on, and
// keeps the rest: an error's text may quote what the table holds.
func sanitize(msg string) string {
	var b strings.Builder
	for i, r := range msg {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(msg[i:], "\uFFFD"):
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(msg[i]), 16))
		case r == '\t' || strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
