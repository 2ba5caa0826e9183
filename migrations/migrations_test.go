package migrations_test

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/shedlock-go/shedlock/migrations"
)

// The migrations, in order, by the name of their files.
var versions = []string{"0001_create_shedlock", "0002_add_fence", "0003_add_last_success", "0004_add_control"}

func up(v string) string    { return v + ".up.sql" }
func down(v string) string  { return v + ".down.sql" }
func goose(v string) string { return "goose/" + v + ".sql" }

// allFiles lists every store's files, sorted.
func allFiles() []string {
	var out []string
	for _, v := range versions {
		out = append(out, up(v), down(v), goose(v))
	}
	slices.Sort(out)
	return out
}

// The exported folders, by the name of their folder in FS.
var dialects = map[string]fs.FS{
	"mysql":    migrations.MySQL,
	"postgres": migrations.PostgreSQL,
	"sqlite":   migrations.SQLite,
}

// Every folder of FS is a store with the same files, and has its variable:
// a store added without its goose file, or without a variable, fails here.
func TestEveryStoreHasTheSameLayout(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, e.Name())
		var files []string
		err := fs.WalkDir(migrations.FS, e.Name(), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path[len(e.Name())+1:])
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(files)
		if want := allFiles(); !slices.Equal(files, want) {
			t.Errorf("%s holds %q, want %q", e.Name(), files, want)
		}
	}
	for dir := range dialects {
		if !slices.Contains(dirs, dir) {
			t.Errorf("no folder %s in FS", dir)
		}
	}
	if len(dirs) != len(dialects) {
		t.Errorf("FS has folders %q; every one needs its variable (and a place in this test)", dirs)
	}
}

// Each variable is its folder, a well-formed fs.FS with every migration's files.
func TestDialectFS(t *testing.T) {
	for dir, fsys := range dialects {
		t.Run(dir, func(t *testing.T) {
			if err := fstest.TestFS(fsys, allFiles()...); err != nil {
				t.Fatal(err)
			}
			for _, name := range allFiles() {
				got, err := fs.ReadFile(fsys, name)
				if err != nil {
					t.Fatal(err)
				}
				want, err := migrations.FS.ReadFile(dir + "/" + name)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s: differs from FS's %s/%s", name, dir, name)
				}
			}
		})
	}
}

// goose's file is golang-migrate's two with goose's markers, so that both tools
// make the same table.
func TestGooseFileMatchesUpAndDown(t *testing.T) {
	for dir, fsys := range dialects {
		read := func(name string) string {
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		for _, v := range versions {
			want := "-- +goose Up\n" + read(up(v)) + "\n-- +goose Down\n" + read(down(v))
			if got := read(goose(v)); got != want {
				t.Errorf("%s/%s:\n%s\nwant:\n%s", dir, goose(v), got, want)
			}
		}
	}
}
