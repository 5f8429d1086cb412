// Package lazy holds values that are built on their first use and cost
// nothing before: a zero Value is ready, so a package-level one needs no
// package init. sync.OnceValue gives the same once-only build, but a
// package-level variable holding its function is set by the package's
// init, which runs, and touches the package's code, in every lockctl
// command (docs/adr/0100).
package lazy

import "sync"

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
