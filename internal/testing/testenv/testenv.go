package testenv

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/kube"
)

// DefaultKwokStages is the kwok Stage YAML that Start uses when
// Options.KwokStages is empty. Its header lists the annotations it honours.
//
//go:embed kwok-stages.yaml
var DefaultKwokStages string

// Annotations that steer a Pod on the fake node; see the package doc.
const (
	// AnnotationHold set to HoldPending keeps a Pod Pending with startTime set.
	AnnotationHold = "lockctl.dev/test-hold"
	// HoldPending is the value of AnnotationHold that holds a Pod in Pending.
	HoldPending = "pending"
	// AnnotationWaitingReason is the waiting reason of a held Pod's
	// containers; empty means ContainerCreating.
	AnnotationWaitingReason = "lockctl.dev/test-waiting-reason"
	// AnnotationExitCode makes a running Pod finish: "0" means Succeeded, any
	// other integer means Failed with that exit code. Absent means the Pod
	// runs until it is deleted.
	AnnotationExitCode = "lockctl.dev/test-exit-code"
	// AnnotationDuration delays the finish that AnnotationExitCode asks for,
	// counted from when kwok sees the Pod Running (or the annotation added).
	// It is a Go duration with a unit ("1500ms", "2s") or an RFC 3339 time;
	// absent or unparsable means no delay.
	AnnotationDuration = "lockctl.dev/test-duration"
)

const (
	// NodeName is the name of the fake Node that kwok manages.
	NodeName = "kwok-node-0"
	// ContextName is the kubeconfig context (and cluster) name Start writes.
	ContextName = "lockctl-test"

	dirPrefix   = "lockctl-testenv-"
	ownerFile   = "owner.pid"
	keepEnv     = "LOCKCTL_TESTENV_KEEP"
	serviceCIDR = "10.0.0.0/24"
	podCIDR     = "10.244.0.0/16"
	kwokNodeKey = "kwok.x-k8s.io/node"
	kwokNodeVal = "fake"
	pollEvery   = 100 * time.Millisecond
	callTimeout = 5 * time.Second
)

// DefaultContainerLog is the log of every container on the fake node when
// Options.ContainerLog is nil.
var DefaultContainerLog = []string{
	"fake container: starting",
	"fake container: working",
	"fake container: done",
}

// serviceIP is the ClusterIP of the kubernetes Service: the first address of
// serviceCIDR.
var serviceIP = net.IPv4(10, 0, 0, 1)

// Options configure Start. The zero value is ready to use.
type Options struct {
	// ToolsDir holds the binaries as <name>-<version>/<name>. Empty means
	// DefaultToolsDir().
	ToolsDir string
	// KwokStages is the kwok Stage YAML (multi-document) that drives Nodes
	// and Pods. Empty means DefaultKwokStages.
	KwokStages string
	// ContainerLog is what every container on the fake node prints, one
	// line each; nil means DefaultContainerLog. The API server fetches it
	// from kwok as from a kubelet (kubectl logs, lockctl logs).
	ContainerLog []string
	// KeepDir keeps Env.Dir (logs, etcd data, certificates) after Stop.
	// false removes it, unless LOCKCTL_TESTENV_KEEP=1 is set.
	KeepDir bool
	// LocksOnly starts etcd and kube-apiserver alone: no kube-scheduler,
	// no kwok, no Node, so no Pod runs. Locks need nothing more, and a
	// test that starts several clusters (StartFleet) costs half the
	// processes.
	LocksOnly bool
}

// Env is a running control plane. Its fields are set by Start and must not be
// changed; copy RESTConfig with rest.CopyConfig before modifying it.
type Env struct {
	// Dir is the temporary directory holding the component logs
	// (<component>.log), etcd data, certificates and the kubeconfig.
	Dir string
	// Kubeconfig is the path of a kubeconfig whose current context,
	// ContextName, is the admin user (group system:masters) in namespace
	// "default".
	Kubeconfig string
	// RESTConfig is the admin client configuration.
	RESTConfig *rest.Config
	// Client is client-go's clientset built from RESTConfig, for a test's
	// own setup and checks.
	Client kubernetes.Interface
	// Kube is lockctl's clients built from RESTConfig (package kube's, as the
	// binary builds them), for the packages under test.
	Kube kube.Interface
	// StartupTime is how long Start took, up to the fake Node being Ready.
	StartupTime time.Duration
	// EtcdURL is etcd's client URL (plain HTTP on loopback), whose /metrics
	// tell the size of the database (bench's BenchmarkCapacity).
	EtcdURL string

	keep     bool
	procs    []*process
	stopOnce sync.Once
}

// Start starts etcd, kube-apiserver, kube-scheduler and kwok on free
// loopback ports in a new temporary directory, creates the fake Node NodeName
// and returns once the API server is ready, the scheduler is ready and the
// Node is Ready. ctx bounds only the start-up; the components run until Stop.
// Start may be called several times in one process; each Env is independent.
// On error nothing is left running, and the error quotes the log of the
// component that failed.
//
// Ports are picked free but only bound by the components a moment later, so
// another process (go test runs packages in parallel) may take one first: a
// start that fails that way is tried again with new ports, up to three times.
func Start(ctx context.Context, opts Options) (*Env, error) {
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, opts)
		if err == nil || attempt == startAttempts || !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			return e, err
		}
		fmt.Fprintf(os.Stderr, "testenv: a port was taken before its component bound it; starting again (%d/%d)\n", attempt+1, startAttempts)
	}
}

// startAttempts bounds the starts tried when a port is taken.
const startAttempts = 3

func start(ctx context.Context, opts Options) (_ *Env, err error) {
	begin := time.Now()
	toolsDir := opts.ToolsDir
	if toolsDir == "" {
		if toolsDir, err = DefaultToolsDir(); err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
	}
	bins, err := findTools(toolsDir)
	if err != nil {
		return nil, err
	}
	stages := opts.KwokStages
	if stages == "" {
		stages = DefaultKwokStages
	}

	reapStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	e := &Env{Dir: dir, keep: opts.KeepDir || os.Getenv(keepEnv) == "1"}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	etcdPort, peerPort, apiPort, schedPort, kubeletPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	creds, err := writeCredentials(filepath.Join(dir, "pki"), serviceIP)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	env := os.Environ()

	// etcd
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := startProcess(dir, "etcd", bins.etcd, []string{
		"--name=testenv",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testenv=" + peerURL,
		"--unsafe-no-fsync",
		// A single member elects itself after one election timeout (default
		// 1s); a short one saves most of that second.
		"--heartbeat-interval=10",
		"--election-timeout=100",
	}, env)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, etcd)
	e.EtcdURL = etcdURL
	if err := e.waitUntil(ctx, "etcd", etcd, func(ctx context.Context) error {
		return httpGetOK(ctx, http.DefaultClient, etcdURL+"/health", `"health":"true"`)
	}); err != nil {
		return nil, err
	}

	// kube-apiserver
	apiserver, err := startProcess(dir, "kube-apiserver", bins.apiserver, []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The default "lease" reconciler refuses a loopback advertise address;
		// nothing here needs the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + creds.certFile,
		"--tls-private-key-file=" + creds.keyFile,
		"--token-auth-file=" + creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + creds.saPubFile,
		"--service-account-signing-key-file=" + creds.saKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		// No controller-manager runs, so no "default" ServiceAccount is ever
		// created, and no node lifecycle controller lifts the not-ready taint
		// that TaintNodesByCondition puts on a new Node. Without these two
		// plugins Pods are admitted without a ServiceAccount and the fake Node
		// is schedulable as soon as it exists.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		// kwok serves the fake node's kubelet API (logs) on 127.0.0.1; the
		// node's Hostname address does not resolve.
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false",
	}, env)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, apiserver)
	e.RESTConfig = &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		BearerToken:     creds.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: creds.caPEM},
		QPS:             100,
		Burst:           200,
	}
	if e.Client, err = kubernetes.NewForConfig(e.RESTConfig); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	if e.Kube, err = kube.NewForConfig(e.RESTConfig); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	if err := e.waitUntil(ctx, "kube-apiserver", apiserver, func(ctx context.Context) error {
		body, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("readyz: %w: %s", err, body)
		}
		_, err = e.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if e.Kubeconfig, err = writeKubeconfig(dir, e.RESTConfig.Host, creds); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	if opts.LocksOnly {
		e.StartupTime = time.Since(begin)
		return e, nil
	}
	if err := createNode(ctx, e.Client); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}

	// kube-scheduler and kwok
	scheduler, err := startProcess(dir, "kube-scheduler", bins.scheduler, []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--authorization-kubeconfig=" + e.Kubeconfig,
		// The API server has no client CA or request-header config, so there
		// is no extension-apiserver-authentication ConfigMap to look up.
		"--authentication-kubeconfig=" + e.Kubeconfig,
		"--authentication-skip-lookup",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--profiling=false",
	}, env)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, scheduler)
	kwokHome := filepath.Join(dir, "kwok")
	stagesFile := filepath.Join(kwokHome, "stages.yaml")
	if err := os.MkdirAll(kwokHome, 0o755); err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	logs, err := writeContainerLog(kwokHome, opts.ContainerLog)
	if err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	if err := os.WriteFile(stagesFile, []byte(stages+"\n---\n"+logs), 0o644); err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	kwok, err := startProcess(dir, "kwok", bins.kwok, []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--config=" + stagesFile,
		"--manage-nodes-with-annotation-selector=" + kwokNodeKey + "=" + kwokNodeVal,
		"--cidr=" + podCIDR,
		// kwok plays the node's kubelet API too: the stages publish this
		// address and port in the Node's status, where the API server finds
		// it, and it serves TLS with the API server's own certificate.
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(kubeletPort),
		"--server-address=127.0.0.1:" + strconv.Itoa(kubeletPort),
		"--tls-cert-file=" + creds.certFile,
		"--tls-private-key-file=" + creds.keyFile,
	}, append(env, "HOME="+kwokHome)) // keep ~/.kwok/kwok.yaml out
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, kwok)

	schedClient := &http.Client{Transport: insecureTransport()}
	schedURL := fmt.Sprintf("https://127.0.0.1:%d/readyz", schedPort)
	if err := e.waitUntil(ctx, "kube-scheduler", scheduler, func(ctx context.Context) error {
		return httpGetOK(ctx, schedClient, schedURL, "ok")
	}); err != nil {
		return nil, err
	}
	if err := e.waitUntil(ctx, "node "+NodeName+" Ready (kwok)", kwok, func(ctx context.Context) error {
		node, err := e.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("node not ready")
	}); err != nil {
		return nil, err
	}
	e.StartupTime = time.Since(begin)
	return e, nil
}

// Stop kills every component (its whole process group) and removes Dir
// unless it is to be kept. It is safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		for i := len(e.procs) - 1; i >= 0; i-- {
			e.procs[i].stop()
		}
		if e.keep {
			// Without an owner, reapStaleDirs leaves the directory alone.
			_ = os.Remove(filepath.Join(e.Dir, ownerFile))
			return
		}
		_ = os.RemoveAll(e.Dir)
	})
}

// waitUntil polls ready every pollEvery until it returns nil. It fails as soon
// as any component has exited, or when ctx ends, quoting the log of proc,
// the component being waited for.
func (e *Env) waitUntil(ctx context.Context, what string, proc *process, ready func(context.Context) error) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if err := firstExited(e.procs...); err != nil {
			return fmt.Errorf("start %s: %w", what, err)
		}
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		err := ready(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start %s: not ready: %w (last check: %v)\n%s", what, context.Cause(ctx), err, proc.logTail())
		case <-tick.C:
		}
	}
}

// httpGetOK checks that url answers 200 with a body containing want.
func httpGetOK(ctx context.Context, c *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// insecureTransport is for the scheduler's health endpoint, whose certificate
// the scheduler generates in memory.
func insecureTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // loopback health probe only
	return t
}

// writeKubeconfig writes dir/kubeconfig for the admin user.
func writeKubeconfig(dir, host string, creds *credentials) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{
			ContextName: {Server: host, CertificateAuthorityData: creds.caPEM},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{
			ContextName + "-admin": {Token: creds.token},
		},
		Contexts: map[string]*clientcmdapi.Context{
			ContextName: {Cluster: ContextName, AuthInfo: ContextName + "-admin", Namespace: metav1.NamespaceDefault},
		},
		CurrentContext: ContextName,
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return path, nil
}

// createNode registers the fake Node that kwok plays the kubelet for.
func createNode(ctx context.Context, c kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokNodeKey: kwokNodeVal},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
		},
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %q: %w", NodeName, err)
	}
	return nil
}

// portsMu guards usedPorts, the ports already handed out in this process, so
// that concurrent Starts never pick the same one.
var (
	portsMu   sync.Mutex
	usedPorts = map[int]bool{}
)

// freePorts returns n distinct free loopback TCP ports.
// NOTE: a port is free when returned, but another process could take it
// before the component binds it; with ephemeral ports that is rare enough.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > n+100 {
			return nil, errors.New("find free ports: too many tries")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find free ports: %w", err)
		}
		// Listeners stay open until the end so the kernel hands out n
		// different ports.
		defer l.Close()
		p := l.Addr().(*net.TCPAddr).Port
		if !usedPorts[p] {
			usedPorts[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// reapStaleDirs removes directories left by earlier test binaries that died
// without Stop (a panic or a kill); their components died with them.
func reapStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// writeContainerLog writes lines as a container log file in the CRI format
// that kwok serves, and returns the kwok ClusterLogs document that serves it
// for every container of every pod.
func writeContainerLog(dir string, lines []string) (string, error) {
	if lines == nil {
		lines = DefaultContainerLog
	}
	var b strings.Builder
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, l := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", at.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), l)
	}
	path := filepath.Join(dir, "container.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: every-container
spec:
  logs:
  - logsFile: %q
`, path), nil
}
