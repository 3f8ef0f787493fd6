package boundary

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sandboxPkg and pid1Pkg: package sandbox holds the parent's code (fedmem-run,
// the backends) and the code both sides run (the wire protocol, errors,
// no-link opens, the Landlock rules); package sandbox/pid1 holds the code
// only the process fedmem-run re-executes as InitArg0 runs: the sandbox's
// pid 1 (InitMain, and the init() that takes a container's descriptors) and
// the user-namespace holder it becomes under `userns-hold`. README's layout,
// sandbox/doc.go and sandbox/pid1/doc.go say the same.
const (
	sandboxPkg = module + "/sandbox"
	pid1Pkg    = module + "/sandbox/pid1"
)

// funcGraph is the functions of packages sandbox and sandbox/pid1 and what
// each references, from the type-checked source (built for Linux, as
// fedmem-run is).
type funcGraph struct {
	pkg   map[types.Object]string // a function's package path
	file  map[types.Object]string // its file (base name)
	name  map[types.Object]string // "f" or "*T.m", for messages
	edges map[types.Object][]types.Object
	// sandboxInits are package sandbox's init() and what its package
	// variables' initialisers reference; pid1Roots are pid1's InitMain
	// and init().
	sandboxInits, pid1Roots []types.Object
	sandbox                 *types.Package
}

// loadInitGraph type-checks packages sandbox and sandbox/pid1 from source
// (pid1 against the sandbox just checked, everything else against export
// data from go list -export) and records, for every function and method of
// either, the functions and methods of either its body names (calls, method
// values, goroutines, closures).
func loadInitGraph(t *testing.T, root string) *funcGraph {
	t.Helper()
	env := append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	goList := func(args ...string) []byte {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir, cmd.Env = root, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(goList("-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", pid1Pkg)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			exports[k] = v
		}
	}
	fset := token.NewFileSet()
	g := &funcGraph{pkg: map[types.Object]string{}, file: map[types.Object]string{}, name: map[types.Object]string{}, edges: map[types.Object][]types.Object{}}
	fromExport := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	ours := map[*types.Package]bool{}
	for _, pkg := range []string{sandboxPkg, pid1Pkg} {
		lines := strings.Split(strings.TrimSpace(string(goList("-f", "{{.Dir}}\n{{join .GoFiles \"\\n\"}}", pkg))), "\n")
		var files []*ast.File
		for _, name := range lines[1:] {
			f, err := parser.ParseFile(fset, filepath.Join(lines[0], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
			if g.sandbox != nil && path == sandboxPkg {
				return g.sandbox, nil
			}
			return fromExport.Import(path)
		})}
		tp, err := conf.Check(pkg, fset, files, info)
		if err != nil {
			t.Fatalf("type-check %s: %v", pkg, err)
		}
		if pkg == sandboxPkg {
			g.sandbox = tp
		}
		ours[tp] = true
		g.addFuncs(fset, files, info, tp, ours)
	}
	return g
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// addFuncs records the functions and methods of files (package tp) and
// their references to functions of the packages in ours.
func (g *funcGraph) addFuncs(fset *token.FileSet, files []*ast.File, info *types.Info, tp *types.Package, ours map[*types.Package]bool) {
	refs := func(n ast.Node) (out []types.Object) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if fn, ok := info.Uses[id].(*types.Func); ok && ours[fn.Pkg()] {
					out = append(out, fn.Origin())
				}
			}
			return true
		})
		return out
	}
	for _, f := range files {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok == token.VAR && tp.Path() == sandboxPkg {
					g.sandboxInits = append(g.sandboxInits, refs(d)...)
				}
			case *ast.FuncDecl:
				obj := info.Defs[d.Name]
				if obj == nil { // init: not an object; its identity is its node
					obj = types.NewFunc(d.Pos(), tp, "init", nil)
				}
				g.pkg[obj], g.file[obj], g.name[obj] = tp.Path(), file, d.Name.Name
				if d.Recv != nil {
					g.name[obj] = types.TypeString(obj.Type().(*types.Signature).Recv().Type(), types.RelativeTo(tp)) + "." + d.Name.Name
				}
				if d.Body != nil {
					g.edges[obj] = refs(d.Body)
				}
				isInit := d.Recv == nil && d.Name.Name == "init"
				switch {
				case tp.Path() == pid1Pkg && (isInit || d.Recv == nil && d.Name.Name == "InitMain"):
					g.pid1Roots = append(g.pid1Roots, obj)
				case tp.Path() == sandboxPkg && isInit:
					g.sandboxInits = append(g.sandboxInits, obj)
				}
			}
		}
	}
}

// reach is every function reachable from roots.
func (g *funcGraph) reach(roots []types.Object) map[types.Object]bool {
	seen := map[types.Object]bool{}
	var walk func(o types.Object)
	walk = func(o types.Object) {
		if seen[o] {
			return
		}
		seen[o] = true
		for _, e := range g.edges[o] {
			walk(e)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return seen
}

// moduleUses is, for each of the named packages, the names other product
// packages of the module but sandbox/pid1 select from it (pkg.Name,
// non-test files, test/ left out), each with the files that do.
func moduleUses(t *testing.T, root string, pkgs ...string) map[string]map[string][]string {
	t.Helper()
	uses := map[string]map[string][]string{}
	for _, p := range pkgs {
		uses[p] = map[string][]string{}
	}
	fset := token.NewFileSet()
	err := walkGoSources(root, func(rel string) bool { return !productPackage(rel) }, func(path string) error {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if module+"/"+filepath.ToSlash(filepath.Dir(rel)) == pid1Pkg {
			return nil // pid1's own names of sandbox are the init's, not the parent's
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := map[string]string{} // the file's name for each package of pkgs it imports
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if _, ok := uses[p]; !ok || module+"/"+filepath.ToSlash(filepath.Dir(rel)) == p {
				continue
			}
			name := filepath.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := s.X.(*ast.Ident); ok && local[x.Name] != "" {
					u := uses[local[x.Name]]
					if files := u[s.Sel.Name]; len(files) == 0 || files[len(files)-1] != rel {
						u[s.Sel.Name] = append(files, rel)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return uses
}

// TestPid1CodeApart: the parent's code and the sandbox's pid 1's are apart
// by package (issue 20). Package sandbox/pid1 is the init's: only
// cmd/fedmem-run imports it, for InitMain alone (which its main calls only
// as InitArg0), package sandbox does not import it, and each of its
// functions is reachable from InitMain or its init(). Package sandbox is
// the parent's and what both run: nothing in it is reachable only from the
// init — every function pid1 reaches there is also reachable from what the
// parent may call (package sandbox's init() and variables, its exported
// methods, and the exported functions another product package but pid1
// names).
func TestPid1CodeApart(t *testing.T) {
	root := moduleRoot(t)
	g := loadInitGraph(t, root)
	uses := moduleUses(t, root, sandboxPkg, pid1Pkg)
	parentRoots := append([]types.Object(nil), g.sandboxInits...)
	for o := range g.file {
		fn := o.(*types.Func)
		if g.pkg[o] != sandboxPkg || !fn.Exported() {
			continue
		}
		if _, named := uses[sandboxPkg][fn.Name()]; named || fn.Type().(*types.Signature).Recv() != nil {
			parentRoots = append(parentRoots, o)
		}
	}
	parent, pid1 := g.reach(parentRoots), g.reach(g.pid1Roots)
	// Positive controls: the graph sees InitMain reach the root's build in
	// pid1 and, across the packages, the no-link open in sandbox; a
	// backend's Run reach the parent's watch; the scan sees fedmem-run's
	// main name pid1.InitMain and sandbox/launch name sandbox's backends.
	names := map[string]types.Object{}
	for o, n := range g.name {
		names[g.pkg[o]+"."+n] = o
	}
	for _, c := range []struct {
		name string
		in   map[types.Object]bool
		what string
	}{{pid1Pkg + ".buildRoot", pid1, "InitMain"}, {sandboxPkg + ".OpenNoLinks", pid1, "InitMain"}, {sandboxPkg + ".*watch.run", parent, "the parent's entry points"}} {
		o, ok := names[c.name]
		if !ok || !c.in[o] {
			t.Fatalf("%s is not reachable from %s: the graph is not the packages' (%d functions)", c.name, c.what, len(g.name))
		}
	}
	if !slices.Contains(uses[pid1Pkg]["InitMain"], "cmd/fedmem-run/main.go") || len(uses[sandboxPkg]) < 10 {
		t.Fatalf("the scan of the module's imports saw pid1 named as %v and %d names of sandbox: not the module's", uses[pid1Pkg], len(uses[sandboxPkg]))
	}
	var bad []string
	for name, files := range uses[pid1Pkg] {
		for _, file := range files {
			if name != "InitMain" || file != "cmd/fedmem-run/main.go" {
				bad = append(bad, fmt.Sprintf("%s names pid1.%s: only fedmem-run's main enters the init, by InitMain", file, name))
			}
		}
	}
	for _, im := range g.sandbox.Imports() {
		if im.Path() == pid1Pkg {
			bad = append(bad, "package sandbox imports sandbox/pid1: the parent would link the init's code")
		}
	}
	for o, file := range g.file {
		switch {
		case g.pkg[o] == pid1Pkg && !pid1[o]:
			bad = append(bad, fmt.Sprintf("sandbox/pid1/%s: %s is not reachable from InitMain or init(): not the init's code", file, g.name[o]))
		case g.pkg[o] == sandboxPkg && pid1[o] && !parent[o]:
			bad = append(bad, fmt.Sprintf("sandbox/%s: %s runs only in the sandbox's pid 1: move it to sandbox/pid1", file, g.name[o]))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
