package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy forwards TCP connections from a loopback port to a target address,
// byte for byte (TLS passes through: the API server's certificate covers
// 127.0.0.1 whatever the port). Freeze makes it a black hole, as a network
// partition or a stalled load balancer is: no byte passes either way and
// no connection is closed; connections made meanwhile are accepted and
// left silent. Thaw lets everything through again, the bytes held back
// included. It is safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	thawed *sync.Cond
	frozen bool
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// StartProxy listens on a free port of 127.0.0.1 and forwards every
// connection to target ("host:port"). Close stops it.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.thawed = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address the proxy listens on: "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops every byte, in both directions, on every connection, old
// and new, until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// Thaw lets bytes through again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = false
	p.thawed.Broadcast()
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.frozen = false
	p.thawed.Broadcast()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// waitThawed blocks while the proxy is frozen; false once it is closed.
func (p *Proxy) waitThawed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.frozen && !p.closed {
		p.thawed.Wait()
	}
	return !p.closed
}

// track remembers c so that Close closes it; false once the proxy is
// closed (c is then closed).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			return
		}
		p.wg.Go(func() { p.serve(in) })
	}
}

// serve connects in to the target once the proxy is thawed, then copies
// both ways.
func (p *Proxy) serve(in net.Conn) {
	if !p.waitThawed() {
		return
	}
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(out) {
		_ = in.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(out, in) })
	wg.Go(func() { p.pipe(in, out) })
	wg.Wait()
}

// pipe copies from src to dst, holding every chunk while frozen; it ends
// both connections when either ends.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		if !p.waitThawed() {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			// NOTE: a read that was under way when the proxy froze holds
			// its bytes until the thaw.
			if !p.waitThawed() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the deferred closes end both
		}
	}
}

// KubeconfigVia writes a copy of e.Kubeconfig whose server is p's address
// into dir and returns its path: a client using it talks to the API server
// through p.
func (e *Env) KubeconfigVia(p *Proxy, dir string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return "", err
		}
		u.Host = p.Addr()
		c.Server = u.String()
	}
	path := filepath.Join(dir, "kubeconfig-via-proxy")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// ProxiedKubeconfig starts a Proxy to e's API server, closed when t ends,
// and writes a kubeconfig through it into dir (KubeconfigVia): what a test
// of a partition gives the process it cuts off. It fails t on an error.
func (e *Env) ProxiedKubeconfig(t testing.TB, dir string) (*Proxy, string) {
	t.Helper()
	addr, err := e.APIServerAddr()
	if err != nil {
		t.Fatalf("proxy to the API server: %v", err)
	}
	p, err := StartProxy(addr)
	if err != nil {
		t.Fatalf("proxy to the API server: %v", err)
	}
	t.Cleanup(p.Close)
	path, err := e.KubeconfigVia(p, dir)
	if err != nil {
		t.Fatalf("kubeconfig through the proxy: %v", err)
	}
	return p, path
}

// APIServerAddr is the API server's "host:port", for StartProxy.
func (e *Env) APIServerAddr() (string, error) {
	u, err := url.Parse(e.RESTConfig.Host)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}
