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
	"sort"
	"strings"
	"testing"
)

// pid1Prefix names the files of package sandbox whose code runs only in
// the process fedmem-run re-executes as InitArg0: the sandbox's pid 1
// (InitMain, and the init() that takes a container's descriptors) and the
// user-namespace holder it becomes under `userns-hold`. Every other file
// holds the parent's code (fedmem-run, the backends) or code both run
// (the wire protocol, errors, no-link opens). README's layout and
// sandbox/doc.go say the same.
const pid1Prefix = "pid1_"

// funcGraph is package sandbox's functions and what each references,
// from the type-checked source (built for Linux, as fedmem-run is).
type funcGraph struct {
	file  map[types.Object]string // a function's file (base name)
	name  map[types.Object]string // "f" or "*T.m", for messages
	edges map[types.Object][]types.Object
	// parentRoots are what the parent may call: exported functions and
	// methods but InitMain, init() outside pid1 files, and what package
	// variables' initialisers reference; pid1Roots are InitMain and init()
	// in pid1 files.
	parentRoots, pid1Roots []types.Object
}

// loadSandboxGraph type-checks package sandbox from source against its
// dependencies' export data (go list -export) and records, for every
// function and method, the functions and methods of the package its body
// names (calls, method values, goroutines, closures).
func loadSandboxGraph(t *testing.T, root string) *funcGraph {
	t.Helper()
	const pkg = module + "/sandbox"
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
	sc := bufio.NewScanner(bytes.NewReader(goList("-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", pkg)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			exports[k] = v
		}
	}
	lines := strings.Split(strings.TrimSpace(string(goList("-f", "{{.Dir}}\n{{join .GoFiles \"\\n\"}}", pkg))), "\n")
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range lines[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(lines[0], name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	tp, err := conf.Check(pkg, fset, files, info)
	if err != nil {
		t.Fatalf("type-check %s: %v", pkg, err)
	}
	g := &funcGraph{file: map[types.Object]string{}, name: map[types.Object]string{}, edges: map[types.Object][]types.Object{}}
	refs := func(n ast.Node) (out []types.Object) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if fn, ok := info.Uses[id].(*types.Func); ok && fn.Pkg() == tp {
					out = append(out, fn)
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
				if d.Tok == token.VAR {
					g.parentRoots = append(g.parentRoots, refs(d)...)
				}
			case *ast.FuncDecl:
				obj := info.Defs[d.Name]
				if obj == nil { // init: not an object; its identity is its node
					obj = types.NewFunc(d.Pos(), tp, "init", nil)
				}
				g.file[obj] = file
				g.name[obj] = d.Name.Name
				if d.Recv != nil {
					g.name[obj] = types.TypeString(obj.Type().(*types.Signature).Recv().Type(), types.RelativeTo(tp)) + "." + d.Name.Name
				}
				if d.Body != nil {
					g.edges[obj] = refs(d.Body)
				}
				isInit := d.Recv == nil && d.Name.Name == "init"
				switch {
				case d.Recv == nil && d.Name.Name == "InitMain", isInit && strings.HasPrefix(file, pid1Prefix):
					g.pid1Roots = append(g.pid1Roots, obj)
				case d.Name.IsExported() || isInit:
					g.parentRoots = append(g.parentRoots, obj)
				}
			}
		}
	}
	return g
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

// TestPid1CodeApart: package sandbox keeps the parent's code and the
// sandbox's pid 1's apart by file name (issue 20): a function in a pid1_
// file is reachable from the init's entry points and from nothing the
// parent may call, and every function only the init reaches lives in a
// pid1_ file. Code both run (the protocol, errors, no-link opens) lives
// outside pid1_ files.
func TestPid1CodeApart(t *testing.T) {
	g := loadSandboxGraph(t, moduleRoot(t))
	parent, pid1 := g.reach(g.parentRoots), g.reach(g.pid1Roots)
	// Positive controls: the graph sees InitMain in a pid1_ file reach
	// the root's build, and a backend's Run reach the parent's watch.
	names := map[string]types.Object{}
	for o, n := range g.name {
		names[n] = o
	}
	for _, c := range []struct {
		name string
		in   map[types.Object]bool
		what string
	}{{"buildRoot", pid1, "InitMain"}, {"*watch.run", parent, "the parent's entry points"}} {
		o, ok := names[c.name]
		if !ok || !c.in[o] {
			t.Fatalf("%s is not reachable from %s: the graph is not the package's (%d functions)", c.name, c.what, len(g.name))
		}
	}
	if o := names["InitMain"]; !strings.HasPrefix(g.file[o], pid1Prefix) {
		t.Fatalf("InitMain is in %s, not a %s file", g.file[o], pid1Prefix)
	}
	var bad []string
	for o, file := range g.file {
		inPid1File := strings.HasPrefix(file, pid1Prefix)
		switch {
		case inPid1File && parent[o]:
			bad = append(bad, fmt.Sprintf("%s: %s runs in the parent (reachable from its entry points): move it out of the %s file, or keep the parent from calling it", file, g.name[o], pid1Prefix))
		case inPid1File && !pid1[o]:
			bad = append(bad, fmt.Sprintf("%s: %s is not reachable from InitMain: not the init's code", file, g.name[o]))
		case !inPid1File && pid1[o] && !parent[o]:
			bad = append(bad, fmt.Sprintf("%s: %s runs only in the sandbox's pid 1: move it to a %s file", file, g.name[o], pid1Prefix))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
