// Command filecycles fails when two files of one package refer to each
// other's package-level names, directly or through others: the root package's
// files stand in layers (CONTRIBUTING.md), each using only names from below.
//
//	go run ./scripts/filecycles .
package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1]))
}

// run reports the reference cycles between the non-test files of the package in
// dir, and returns the exit status: 1 when there is one.
func run(dir string) int {
	fs := token.NewFileSet()
	var files []*ast.File
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fs, n, nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "filecycles:", err)
			return 2
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fs, "source", nil)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, err := conf.Check("x", fs, files, info)
	if err != nil {
		fmt.Fprintln(os.Stderr, "filecycles:", err)
		return 2
	}
	edges := map[string]map[string]bool{}
	add := func(from string, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		// package-level objects and methods/fields of package types
		to := filepath.Base(fs.Position(obj.Pos()).Filename)
		if to == from {
			return
		}
		if edges[from] == nil {
			edges[from] = map[string]bool{}
		}
		edges[from][to] = true
	}
	for id, obj := range info.Uses {
		from := filepath.Base(fs.Position(id.Pos()).Filename)
		if obj.Parent() == pkg.Scope() {
			add(from, obj)
		}
	}
	// SCC via Tarjan
	var nodes []string
	for _, f := range files {
		nodes = append(nodes, filepath.Base(fs.Position(f.Pos()).Filename))
	}
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	i := 0
	var sccs [][]string
	var strong func(v string)
	strong = func(v string) {
		index[v] = i
		low[v] = i
		i++
		stack = append(stack, v)
		on[v] = true
		for w := range edges[v] {
			if _, ok := index[w]; !ok {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			if len(c) > 1 {
				sort.Strings(c)
				sccs = append(sccs, c)
			}
		}
	}
	for _, n := range nodes {
		if _, ok := index[n]; !ok {
			strong(n)
		}
	}
	if len(sccs) == 0 {
		fmt.Println("file cycles: none")
		return 0
	}
	fmt.Printf("file cycles: %d; a name that both sides need belongs in a file below both\n", len(sccs))
	for _, c := range sccs {
		fmt.Println(" ", c)
		for _, a := range c {
			for b := range edges[a] {
				for _, x := range c {
					if x == b {
						fmt.Println("    ", a, "->", b)
					}
				}
			}
		}
	}
	return 1
}
