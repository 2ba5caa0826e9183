package sqlstore

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// QuoteTable validates a table name, optionally schema-qualified, and returns it
// quoted with q (a backtick for MySQL, a double quote for PostgreSQL and
// SQLite). Only plain identifiers pass, so nothing from an option reaches SQL
// that could change it.
func QuoteTable(name string, q byte) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("%w: WithTableName(%q): at most one dot, as schema.table", lockerr.InvalidOption, name)
	}
	var b strings.Builder
	for i, p := range parts {
		if !IsIdentifier(p) {
			return "", fmt.Errorf("%w: WithTableName(%q): %q is not a plain identifier "+
				"(1..64 of letters, digits, _ or $, not starting with a digit)", lockerr.InvalidOption, name, p)
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteByte(q)
		b.WriteString(p)
		b.WriteByte(q)
	}
	return b.String(), nil
}

// IsIdentifier reports whether s is a plain SQL identifier: 1..64 of letters,
// digits, _ or $, not starting with a digit.
func IsIdentifier(s string) bool {
	if s == "" || len(s) > 64 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
