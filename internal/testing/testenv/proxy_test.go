package testenv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProxyFreeze: bytes pass both ways; frozen, none pass and the
// connection stays open (a read times out, it does not end); thawed, the
// bytes held back arrive. A connection made while frozen is accepted and
// silent until the thaw.
func TestProxyFreeze(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c) }() // echo
		}
	}()
	p, err := StartProxy(ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(p.Close)

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	echo := func(line string) {
		t.Helper()
		_, err := c.Write([]byte(line + "\n"))
		require.NoError(t, err)
	}
	echo("one")
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "one\n", got)

	p.Freeze()
	echo("two")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = r.ReadString('\n')
	require.Error(t, err, "nothing passes while frozen")
	assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "the connection stays open: %v", err)

	late, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "accepted while frozen")
	t.Cleanup(func() { _ = late.Close() })
	_, err = late.Write([]byte("three\n"))
	require.NoError(t, err)

	p.Thaw()
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	got, err = r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "two\n", got, "held back, then delivered")
	got, err = bufio.NewReader(late).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "three\n", got, "the connection made while frozen")
}
