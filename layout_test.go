// Package rdmarun holds no code: its one test keeps README.md's Layout
// section in step with the module's packages, which no package's own
// tests can see all of.
package rdmarun

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const layoutHeading = "## Layout\n"

// layoutBlock returns the code block under README.md's Layout heading and
// the line it starts on, so a failure can say where to look.
func layoutBlock(readme string) (block string, line int, err error) {
	i := strings.Index(readme, layoutHeading)
	if i < 0 {
		return "", 0, fmt.Errorf("no %q heading", strings.TrimSpace(layoutHeading))
	}
	rest := readme[i+len(layoutHeading):]
	open := strings.Index(rest, "```\n")
	if open < 0 {
		return "", 0, fmt.Errorf("no code block after %q", strings.TrimSpace(layoutHeading))
	}
	body := rest[open+len("```\n"):]
	end := strings.Index(body, "\n```")
	if end < 0 {
		return "", 0, fmt.Errorf("the code block after %q is not closed", strings.TrimSpace(layoutHeading))
	}
	line = strings.Count(readme[:i+len(layoutHeading)+open+len("```\n")], "\n") + 1
	return body[:end+1], line, nil
}

// pathToken is a directory as the Layout writes one: ending in a slash,
// which keeps words such as "and/or" from counting.
var pathToken = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/$`)

func pathTokens(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		f = strings.TrimLeft(f, "(`\"")
		f = strings.TrimRight(f, ",;:)`\"")
		if pathToken.MatchString(f) {
			out = append(out, f)
		}
	}
	return out
}

// layoutEntry is one entry of the Layout: a line at column 0 and the
// indented lines that continue it.
type layoutEntry struct {
	heads []string // the directories the entry is about, each with its slash
	text  string
}

func layoutEntries(block string) []layoutEntry {
	var entries []layoutEntry
	for _, l := range strings.Split(block, "\n") {
		if l == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			if len(entries) > 0 {
				entries[len(entries)-1].text += "\n" + l
			}
			continue
		}
		e := layoutEntry{text: l}
		// The heads are the paths that open the line, joined by commas,
		// before its description: "a/, b/   what they are". The
		// description may start with a subdirectory: "p/   q/ (...)".
		for _, f := range strings.Fields(l) {
			p, more := strings.CutSuffix(f, ",")
			if !pathToken.MatchString(p) {
				break
			}
			e.heads = append(e.heads, p)
			if !more {
				break
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// mentioned is every directory the Layout names: each path as written,
// and each path within an entry taken also under the entry's first head,
// so "exporter/   ... config/, prober/ ..." names exporter/config.
func mentioned(block string) map[string]bool {
	m := map[string]bool{}
	for _, e := range layoutEntries(block) {
		for _, t := range pathTokens(e.text) {
			m[strings.TrimSuffix(t, "/")] = true
			if len(e.heads) > 0 {
				m[path.Join(e.heads[0], t)] = true
			}
		}
	}
	return m
}

// unlisted returns the package directories the Layout block does not name.
func unlisted(block string, dirs []string) []string {
	m := mentioned(block)
	var out []string
	for _, d := range dirs {
		if !m[d] {
			out = append(out, d)
		}
	}
	return out
}

// packageDirs lists the directories of the module under root that hold Go
// files, as `go list ./...` would: not testdata, not what the go command
// ignores (names starting with . or _), and not nested modules
// (packaging/validate and tools have go.mod files of their own). The root
// is left out: this test is its only file.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root {
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return fs.SkipDir
			}
		}
		files, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, f := range files {
			if !f.IsDir() && strings.HasSuffix(f.Name(), ".go") {
				if p != root {
					rel, err := filepath.Rel(root, p)
					if err != nil {
						return err
					}
					dirs = append(dirs, filepath.ToSlash(rel))
				}
				break
			}
		}
		return nil
	})
	slices.Sort(dirs)
	return dirs, err
}

func TestUnlisted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block string
		dirs  []string
		want  []string
	}{
		{
			name:  "each path written out",
			block: "cmd/tool/      the CLI\nrdma/          the core\nrdma/rdmatest/ its checks\n",
			dirs:  []string{"cmd/tool", "rdma", "rdma/rdmatest"},
		},
		{
			name:  "a package left out is named",
			block: "cmd/tool/      the CLI\nrdma/          the core\n",
			dirs:  []string{"cmd/tool", "rdma", "rdma/rdmatest", "units"},
			want:  []string{"rdma/rdmatest", "units"},
		},
		{
			name:  "subdirectories listed under their parent",
			block: "exporter/      the daemon's parts: config/ (the file),\n               prober/, exposition/; and the tests (e2e/)\n",
			dirs:  []string{"exporter/config", "exporter/prober", "exporter/exposition", "exporter/e2e", "exporter/mesh"},
			want:  []string{"exporter/mesh"},
		},
		{
			name:  "several heads on one line",
			block: "internal/a/, internal/b/,\ninternal/c/\n               helpers\nprometheus/    rules/ (the rules)\n",
			dirs:  []string{"internal/a", "internal/b", "internal/c", "internal/d", "prometheus/rules"},
			want:  []string{"internal/d"},
		},
		{
			name:  "a subdirectory named under another entry is not a mention",
			block: "exporter/      the daemon; see mesh/\nfleet/         plans\n",
			dirs:  []string{"exporter/mesh", "fleet/mesh"},
			want:  []string{"fleet/mesh"},
		},
		{
			name:  "a name without its slash does not count",
			block: "exporter/      the daemon: config, prober\n",
			dirs:  []string{"exporter/config"},
			want:  []string{"exporter/config"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unlisted(tc.block, tc.dirs)
			if !slices.Equal(got, tc.want) {
				t.Errorf("unlisted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLayoutBlock(t *testing.T) {
	for _, tc := range []struct {
		name, readme, want, err string
		line                    int
	}{
		{name: "found", readme: "# x\n\n## Layout\n\n```\na/   b\n```\n", want: "a/   b\n", line: 6},
		{name: "no heading", readme: "# x\n", err: `no "## Layout" heading`},
		{name: "no block", readme: "## Layout\n\ntext\n", err: `no code block after "## Layout"`},
		{name: "not closed", readme: "## Layout\n\n```\na/\n", err: `the code block after "## Layout" is not closed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, line, err := layoutBlock(tc.readme)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || line != tc.line {
				t.Errorf("layoutBlock = %q, line %d, %v; want %q, line %d", got, line, err, tc.want, tc.line)
			}
		})
	}
}

// TestLayout fails for each package of the module that README.md's Layout
// does not name, and for each directory it opens an entry with that does
// not exist, so the map of the code cannot fall behind it.
func TestLayout(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	block, line, err := layoutBlock(string(b))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	dirs, err := packageDirs(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dirs, "rdma") || !slices.Contains(dirs, "cmd/rdmarun") {
		t.Fatalf("the walk found %q, which lacks rdma and cmd/rdmarun: it is not walking the module", dirs)
	}
	if slices.Contains(dirs, "packaging/validate") {
		t.Errorf("the walk went into packaging/validate, a module of its own")
	}
	for _, d := range unlisted(block, dirs) {
		t.Errorf("README.md:%d: the Layout block does not mention the package %s/; add a line for it (or list it under its parent's entry as %s/)", line, d, path.Base(d))
	}
	for _, e := range layoutEntries(block) {
		for _, h := range e.heads {
			if fi, err := os.Stat(h); err != nil || !fi.IsDir() {
				t.Errorf("README.md:%d: the Layout has an entry for %s, which is not a directory of the module; remove or rename it", line, h)
			}
		}
	}
}

func TestLayoutHeads(t *testing.T) {
	block := "internal/a/, internal/b/,\ninternal/c/\n               helpers, see d/\n" +
		"prometheus/    rules/ (the rules)\nLICENSE        the licence, in tools/\n"
	want := [][]string{{"internal/a/", "internal/b/"}, {"internal/c/"}, {"prometheus/"}, nil}
	entries := layoutEntries(block)
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i, e := range entries {
		if !slices.Equal(e.heads, want[i]) {
			t.Errorf("entry %d (%q): heads %q, want %q", i, e.text, e.heads, want[i])
		}
	}
}
