// Package lazy holds values that are built on their first use and cost
// nothing before: a zero Value is ready, so a package-level one needs no
// package init. sync.OnceValue gives the same once-only build, but a
// package-level variable holding its function is set by the package's
// init, which runs, and touches the package's code, in every lockctl
// command (docs/adr/0100).
package lazy

import (
	"regexp"
	"sync"
)

// Value is a value of type T built once, by the first Get. The zero Value
// is ready to use; it must not be copied after the first Get.
type Value[T any] struct {
	once sync.Once
	v    T
}

// Get returns the value, building it with build on the first call; later
// calls return the same value and do not call build. Calls may be
// concurrent: they all return once the value is built.
func (l *Value[T]) Get(build func() T) T {
	l.once.Do(func() { l.v = build() })
	return l.v
}

// Regexp is the regular expression Expr, compiled by the first Get: a
// package-level Regexp{Expr: ...} needs no package init, where a
// regexp.MustCompile would compile in every lockctl command.
type Regexp struct {
	Expr string
	v    Value[*regexp.Regexp]
}

// Get returns Expr compiled; it panics if Expr is not valid, as
// regexp.MustCompile does.
func (r *Regexp) Get() *regexp.Regexp {
	return r.v.Get(func() *regexp.Regexp { return regexp.MustCompile(r.Expr) })
}
