// Package readme holds the Go code that README.md shows, so that CI compiles every
// snippet: each ```go block of the README must appear verbatim, indentation aside,
// in a .go file of this directory tree (readme_test.go checks it). A block may be
// a whole program or an excerpt of one. The programs are in subdirectories:
// quickstart (a robfig/cron job on MySQL/MariaDB) and fixeddelay.
package readme
