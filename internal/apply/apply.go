// Package apply holds the one option idiom of every published module of
// this repository: a constructor's options, each a func(*T) error, apply in
// order, and the first nil or bad one is the error.
//
// The sibling modules (shedlockredis, shedlocketcd, shedlockprom,
// shedlockotel, shedlockgocron) import it across module lines, which Go allows for
// github.com/shedlock-go/shedlock/... paths. A sibling of one release may
// then be built with the root of a later one, so what is here is a contract
// between modules: add, never change or remove.
package apply

import (
	"fmt"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Options applies opts to dst in order. A nil option is an error wrapping
// lockerr.InvalidOption (shedlock.ErrInvalidOption) that names ctor and the
// option's position, counting from 0; an option's own error is returned as it
// is (each names itself).
func Options[T any, O ~func(*T) error](ctor string, dst *T, opts []O) error {
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: %s: option %d is nil", lockerr.InvalidOption, ctor, i)
		}
		if err := opt(dst); err != nil {
			return err
		}
	}
	return nil
}
