package boundary

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function outside tests may be (issue 20's
// acceptance: a reader holds one function's steps in view; a longer one is
// split into named steps).
const maxFuncLines = 150

// longFunc is one function (or method, or function literal at top level of
// a var) longer than maxFuncLines.
type longFunc struct {
	pos   string // file:line, relative to the module root
	name  string
	lines int
}

// longFunctions walks every non-test .go file under root (skipping testdata
// and hidden directories) and returns the functions longer than limit
// lines, counted from the line of `func` to the line of its closing brace.
func longFunctions(root string, limit int) ([]longFunc, int, error) {
	var found []longFunc
	files := 0
	fset := token.NewFileSet()
	err := walkGoSources(root, nil, func(path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos()).Line
			n := fset.Position(fn.End()).Line - start + 1
			if n > limit {
				found = append(found, longFunc{pos: fmt.Sprintf("%s:%d", rel, start), name: funcName(fn), lines: n})
			}
		}
		return nil
	})
	sort.Slice(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	return found, files, err
}

// funcName is fn's name with its receiver type, as a reader searches for it.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch r := t.(type) {
	case *ast.Ident:
		return r.Name + "." + fn.Name.Name
	case *ast.IndexExpr:
		if id, ok := r.X.(*ast.Ident); ok {
			return id.Name + "." + fn.Name.Name
		}
	}
	return fn.Name.Name
}

// TestNoLongFunctions: no function outside tests is longer than
// maxFuncLines lines (issue 20's acceptance).
func TestNoLongFunctions(t *testing.T) {
	root := moduleRoot(t)
	found, files, err := longFunctions(root, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	// Positive control: the walk read the module's code, not an empty tree.
	if files < 100 {
		t.Fatalf("read %d non-test Go files under %s: the walk did not see the module", files, root)
	}
	for _, f := range found {
		t.Errorf("%s: %s is %d lines (limit %d): split it into named steps", f.pos, f.name, f.lines, maxFuncLines)
	}
}

// TestLongFunctionsSeesALongOne: the measure counts a long function in a
// fixture tree, and stops at the limit (so TestNoLongFunctions can fail).
func TestLongFunctionsSeesALongOne(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package p\n\nfunc long() {\n")
	for i := 0; i < maxFuncLines-1; i++ {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n\nfunc short() {}\n")
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same function in a _test.go file is not counted.
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(strings.Replace(b.String(), "long()", "longTest()", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// long is maxFuncLines+1 lines: func line, maxFuncLines-1 body lines, brace.
	found, _, err := longFunctions(dir, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].name != "long" || found[0].lines != maxFuncLines+1 || found[0].pos != "p.go:3" {
		t.Fatalf("longFunctions = %+v; want one: long at p.go:3, %d lines", found, maxFuncLines+1)
	}
	if found, _, _ := longFunctions(dir, maxFuncLines+1); len(found) != 0 {
		t.Fatalf("longFunctions at limit %d = %+v; want none", maxFuncLines+1, found)
	}
}
