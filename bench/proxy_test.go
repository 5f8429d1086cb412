package bench

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// countingProxy is a plain-HTTP reverse proxy on loopback in front of the
// API server that counts every request passing through it. A process given
// its Kubeconfig is counted whole, by URL, without changing its code: how
// the requests of the real lockctl binary are counted.
//
// NOTE: the proxy spares its clients the TLS handshake with the API server,
// so processes are timed without it and counted with it, in separate runs.
type countingProxy struct {
	Counter
	// Kubeconfig points at the proxy, namespace "default", no credentials.
	Kubeconfig string
}

// startCountingProxy serves a counting proxy to env's API server until the
// benchmark ends.
func startCountingProxy(b testing.TB, env *testenv.Env) *countingProxy {
	b.Helper()
	target, err := url.Parse(env.RESTConfig.Host)
	require.NoError(b, err)
	rt, err := rest.TransportFor(env.RESTConfig)
	require.NoError(b, err)
	p := &countingProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.Host = target.Host },
		Transport:     &countingTransport{next: rt, c: &p.Counter},
		FlushInterval: -1, // watches stream
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{Handler: rp} //nolint:gosec // loopback, lives as long as the benchmark
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + ln.Addr().String()}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy", Namespace: "default"}
	cfg.CurrentContext = "proxy"
	p.Kubeconfig = filepath.Join(b.TempDir(), "kubeconfig")
	require.NoError(b, clientcmd.WriteToFile(*cfg, p.Kubeconfig))
	return p
}
