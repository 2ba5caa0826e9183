// Package readme holds the Go code that README.md shows, so that CI compiles every
// snippet: each ```go block of the README must appear verbatim, indentation aside,
// in a .go file of this directory tree (readme_test.go checks it). A block may be
// a whole program or an excerpt of one. The programs are in subdirectories:
// quickstart (a robfig/cron job on MySQL/MariaDB), fixeddelay, byhand, gocron,
// observe, stores and fencing (Schedule and fencing tokens on PostgreSQL). The
// setup at the top of the package doc (doc.go) is checked the same way, against
// pkgdoc.
package readme
