package lazy

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValueBuiltOnce: concurrent first calls build the value once and all
// get it; later calls do not build again.
func TestValueBuiltOnce(t *testing.T) {
	t.Parallel()
	var (
		v      Value[*int]
		builds atomic.Int32
		wg     sync.WaitGroup
	)
	build := func() *int {
		builds.Add(1)
		n := 42
		return &n
	}
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() { got[i] = v.Get(build) })
	}
	wg.Wait()
	for i := range got {
		assert.Same(t, got[0], got[i], "call %d gets the one value", i)
	}
	assert.Equal(t, 42, *v.Get(build))
	assert.Equal(t, int32(1), builds.Load(), "built once")
}
