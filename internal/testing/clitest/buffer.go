package clitest

import (
	"bytes"
	"io"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for a writer and a reader at once: a
// console's redraw goroutine, a run's goroutines, a process's output read
// while it runs. The zero value is empty and ready to use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var _ io.Writer = (*SyncBuffer)(nil)

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
