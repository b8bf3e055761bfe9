// Command apisurface counts each package's exported identifiers: top-level
// names plus the exported methods of exported types, from the non-test
// files of every build (a name declared per OS counts once).
//
//	go run ./scripts/apisurface batchio batchio/batchiotest bench  # LIST=1 lists them
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	total := 0
	for _, dir := range os.Args[1:] {
		names, err := exported(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if os.Getenv("LIST") != "" {
			for _, n := range names {
				fmt.Println("  ", dir, n)
			}
		}
		fmt.Printf("%-20s %d\n", dir, len(names))
		total += len(names)
	}
	fmt.Printf("%-20s %d\n", "total", total)
}

// exported returns the sorted, deduplicated exported names of the package
// in dir.
func exported(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			names = append(names, declNames(d)...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
		if recv := recvType(d.Recv.List[0].Type); recv != nil && recv.IsExported() {
			return []string{recv.Name + "." + d.Name.Name}
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// recvType is the type name of a method's receiver (T, *T, T[P] or *T[P]).
func recvType(t ast.Expr) *ast.Ident {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, _ := t.(*ast.Ident)
	return id
}
