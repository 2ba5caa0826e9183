package readme

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// marker is the README line that turns the check on.
const marker = "<!-- snippets: examples/readme -->"

// checkerFile is this file: the blocks it quotes in its own tests must not count
// as compiled.
const checkerFile = "readme_test.go"

// TestReadmeSnippetsCompiled fails for every ```go block of README.md that is not,
// verbatim, in a .go file of this directory tree: those files are compiled by
// `go vet ./...` and `go test ./...` in CI, so the README's Go is too.
func TestReadmeSnippetsCompiled(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(string(readme), marker) {
		t.Skipf("README.md has no %q line, so its Go blocks are not checked: add the line once every block is in examples/readme", marker)
	}
	sources, err := goSources(".")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := missingSnippets(string(readme), sources)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, s := range missing {
		t.Errorf("README.md:%d: this Go block is in no .go file under examples/readme; "+
			"put the code in one (it is compiled there) and copy it from there verbatim, tabs as gofmt writes them:\n%s",
			s.line, s.head(3))
	}
}

// TestPackageDocSetupCompiled fails for every code block at the top of the
// package doc (doc.go, before its first heading: the setup `go doc` shows
// first) that is not, verbatim, in a .go file of this directory tree.
func TestPackageDocSetupCompiled(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := docTopBlocks(string(doc))
	if len(blocks) == 0 {
		t.Fatal("doc.go: no code block before the first heading: the package doc should open with a setup")
	}
	sources, err := goSources(".")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := missingSnippets(blocks, sources)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range missing {
		t.Errorf("doc.go: this code block is in no .go file under examples/readme; put it in one "+
			"(examples/readme/pkgdoc) and copy it from there verbatim:\n%s", s.head(3))
	}
}

// docTopBlocks returns the code blocks of a package doc comment that come
// before its first heading, as Markdown ```go blocks: lines "//\t..." are code.
func docTopBlocks(src string) string {
	var out strings.Builder
	inBlock := false
	for _, l := range splitLines(src) {
		if !strings.HasPrefix(l, "//") || strings.HasPrefix(l, "// # ") {
			break
		}
		code, isCode := strings.CutPrefix(l, "//\t")
		switch {
		case isCode && !inBlock:
			out.WriteString("```go\n")
			inBlock = true
		case !isCode && inBlock && strings.TrimSpace(strings.TrimPrefix(l, "//")) != "":
			out.WriteString("```\n")
			inBlock = false
		}
		if inBlock && isCode {
			out.WriteString(code)
		}
		if inBlock {
			out.WriteString("\n")
		}
	}
	if inBlock {
		out.WriteString("```\n")
	}
	return out.String()
}

// TestMissingSnippetsReportsUnknownBlock shows that the check can fail: of a
// whole program, an indented excerpt of it and a block found nowhere, only the
// last is reported.
func TestMissingSnippetsReportsUnknownBlock(t *testing.T) {
	source := "package main\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tprintln(i)\n\t}\n}\n"
	readme := "# Title\n\n" + marker + "\n\n```go\n" + source + "```\n\n" +
		"- an excerpt, indented in a list:\n\n  ```go\n  for i := 0; i < 3; i++ {\n  \tprintln(i)\n  }\n  ```\n\n" +
		"```sh\ngo run .\n```\n\n" +
		"```go\nfor i := 0; i < 3; i++ {\n    println(i)\n}\n```\n"
	missing, err := missingSnippets(readme, map[string]string{"main.go": source})
	if err != nil {
		t.Fatal(err)
	}
	unknown := strings.Count(readme[:strings.LastIndex(readme, "```go")], "\n") + 1
	if len(missing) != 1 || missing[0].line != unknown || missing[0].head(1) != "\tfor i := 0; i < 3; i++ {" {
		t.Fatalf("missing = %+v, want the block at line %d alone (its spaces are not gofmt's tab)", missing, unknown)
	}

	if _, err := missingSnippets("```go\npackage main\n", nil); err == nil {
		t.Fatal("an unterminated ```go block was accepted")
	}
}

// snippet is one ```go block of the README.
type snippet struct {
	line  int      // README line of the opening fence
	lines []string // the block's lines, common indentation removed
}

// head returns the block's first n lines, each indented by a tab.
func (s snippet) head(n int) string {
	lines := s.lines[:min(n, len(s.lines))]
	return "\t" + strings.Join(lines, "\n\t")
}

// missingSnippets returns the ```go blocks of readme found in none of sources
// (file name to content).
func missingSnippets(readme string, sources map[string]string) ([]snippet, error) {
	blocks, err := goBlocks(readme)
	if err != nil {
		return nil, err
	}
	files := make([][]string, 0, len(sources))
	for _, src := range sources {
		files = append(files, splitLines(src))
	}
	var missing []snippet
	for _, b := range blocks {
		found := false
		for _, f := range files {
			if contains(f, b.lines) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, b)
		}
	}
	return missing, nil
}

// goBlocks returns the fenced code blocks of a Markdown text whose info string
// says go (or golang), following CommonMark's fences: ``` or ~~~, closed by a
// fence of the same character at least as long.
func goBlocks(markdown string) ([]snippet, error) {
	var blocks []snippet
	var open string // the opening fence while inside a block
	var isGo bool
	var start int
	var body []string
	for i, line := range splitLines(markdown) {
		trimmed := strings.TrimLeft(line, " \t")
		if open == "" {
			fence := fenceOf(trimmed)
			if fence == "" {
				continue
			}
			open, start, body = fence, i+1, nil
			info := strings.Fields(trimmed[len(fence):])
			isGo = len(info) > 0 && (strings.EqualFold(info[0], "go") || strings.EqualFold(info[0], "golang"))
			continue
		}
		if fence := fenceOf(trimmed); fence != "" && fence[0] == open[0] && len(fence) >= len(open) &&
			strings.TrimSpace(trimmed[len(fence):]) == "" {
			if isGo {
				blocks = append(blocks, snippet{line: start, lines: dedent(trimBlank(body))})
			}
			open = ""
			continue
		}
		body = append(body, line)
	}
	if open != "" && isGo {
		return nil, fmt.Errorf("line %d: the ```go block is never closed", start)
	}
	return blocks, nil
}

// fenceOf returns the run of three or more backticks or tildes that line starts
// with, or "".
func fenceOf(line string) string {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	n := len(line) - len(strings.TrimLeft(line, line[:1]))
	if n < 3 {
		return ""
	}
	return line[:n]
}

// contains reports whether want appears in lines as consecutive lines, once the
// window's common indentation is removed.
func contains(lines, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for i := 0; i+len(want) <= len(lines); i++ {
		if strings.TrimLeft(lines[i], " \t") != strings.TrimLeft(want[0], " \t") {
			continue
		}
		window := dedent(lines[i : i+len(want)])
		if equal(window, want) {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dedent removes the indentation that all non-blank lines share, and blanks the
// blank ones.
func dedent(lines []string) []string {
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		for !strings.HasPrefix(indent, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			out[i] = strings.TrimPrefix(l, prefix)
		}
	}
	return out
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// splitLines splits text into lines without their trailing white space.
func splitLines(text string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), " \t\r"))
	}
	return lines
}

func hasLine(text, line string) bool {
	for _, l := range splitLines(text) {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// goSources reads the .go files under dir that every build compiles: not this
// checker, nor files under a build constraint, nor directories the go command
// ignores.
func goSources(dir string) (map[string]string, error) {
	sources := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || path == filepath.Join(dir, checkerFile) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !hasBuildConstraint(string(src)) {
			sources[path] = string(src)
		}
		return nil
	})
	return sources, err
}

// hasBuildConstraint reports whether a //go:build line comes before the package
// clause.
func hasBuildConstraint(src string) bool {
	for _, l := range splitLines(src) {
		if strings.HasPrefix(l, "package ") {
			return false
		}
		if strings.HasPrefix(l, "//go:build") {
			return true
		}
	}
	return false
}
