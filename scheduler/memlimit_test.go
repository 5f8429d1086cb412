package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimitFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name       string
		live, want int64
	}{
		{name: "small live heap: the floor", live: 20 * mib, want: 80 * mib},
		{name: "up to the floor", live: 57 * mib, want: 80 * mib},
		{name: "above: a quarter more plus headroom, in 4 MiB steps", live: 100 * mib, want: 136 * mib},
		{name: "rounded up", live: 101 * mib, want: 136 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, memoryLimitFor(tt.live, 80*mib))
		})
	}
}
