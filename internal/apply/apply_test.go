package apply_test

import (
	"errors"
	"testing"

	"github.com/shedlock-go/shedlock/internal/apply"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

type config struct{ applied []int }

type option func(*config) error

func TestOptions(t *testing.T) {
	add := func(n int) option { return func(c *config) error { c.applied = append(c.applied, n); return nil } }
	bad := errors.New("WithX: bad")
	var c config
	if err := apply.Options("New", &c, []option{add(1), add(2)}); err != nil || len(c.applied) != 2 || c.applied[1] != 2 {
		t.Fatalf("in order: %v, %v", c.applied, err)
	}
	err := apply.Options("pkg.New", &c, []option{add(3), nil, add(4)})
	if !errors.Is(err, lockerr.InvalidOption) || err.Error() != "shedlock: invalid option: pkg.New: option 1 is nil" {
		t.Fatalf("nil option: %v", err)
	}
	if err := apply.Options("New", &c, []option{func(*config) error { return bad }, add(5)}); err != bad {
		t.Fatalf("an option's own error as it is: %v", err)
	}
	if c.applied[len(c.applied)-1] != 3 {
		t.Fatalf("nothing applied past the first bad one: %v", c.applied)
	}
}
