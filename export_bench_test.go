package shedlock

import (
	"context"
	"strings"
)

// MySQLCycleSQL returns the exact acquire (steady-state UPDATE) and release texts
// p sends, so that benchmarks can send the same statements without the library
// and measure the floor the library is compared with.
func MySQLCycleSQL(ctx context.Context, p *MySQLProvider) (acquire, release string, err error) {
	st, err := p.statements(ctx)
	if err != nil {
		return "", "", err
	}
	text := func(stmt string) string { return st.dialect(strings.ReplaceAll(stmt, "{t}", p.table)) }
	return text(mysqlUpdate), text(mysqlRelease), nil
}
