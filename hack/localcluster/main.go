// Command localcluster starts the same real control plane the integration
// tests use (etcd, kube-apiserver, kube-scheduler and kwok with one fake
// node) in the background, for the demo and for trying lockctl by hand.
//
//	localcluster up      start it (or say it already runs) and print the kubeconfig
//	localcluster down    stop it
//	localcluster status  say whether it runs
//	localcluster write-as USER NAMESPACE
//	                     write a ConfigMap in NAMESPACE as USER (impersonated,
//	                     granted the right to), as someone who does not hold
//	                     the lock would: the demo of lockctl enforce
//
// State lives in _output/local: kubeconfig, pid and the server's log.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

const startTimeout = 3 * time.Minute

func main() {
	if len(os.Args) == 4 && os.Args[1] == "write-as" {
		if err := writeAs(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: localcluster up|down|status")
		os.Exit(2)
	}
	dir, err := stateDir()
	if err == nil {
		switch os.Args[1] {
		case "up":
			err = up(dir)
		case "down":
			err = down(dir)
		case "status":
			status(dir)
		case "serve":
			err = serve(dir)
		default:
			err = fmt.Errorf("unknown command %q: use up, down or status", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func stateDir() (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", errors.New("run from inside the lockctl repository")
		}
		root = parent
	}
	dir := filepath.Join(root, "_output", "local")
	return dir, os.MkdirAll(dir, 0o755)
}

// running returns the pid of the serving process, or 0.
func running(dir string) int {
	raw, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); err != nil {
		return 0
	}
	return pid
}

func up(dir string) error {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if pid := running(dir); pid != 0 {
		fmt.Printf("local control plane already running (pid %d)\nexport KUBECONFIG=%s\n", pid, kubeconfig)
		return nil
	}
	_ = os.Remove(kubeconfig)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, "serve")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	begin := time.Now()
	for {
		if running(dir) != 0 {
			fmt.Printf("local control plane ready in %s (logs: %s)\nexport KUBECONFIG=%s\n",
				time.Since(begin).Round(100*time.Millisecond), logFile.Name(), kubeconfig)
			return nil
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logFile.Name())
			return fmt.Errorf("server exited (%v):\n%s", err, tail)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(begin) > startTimeout+10*time.Second {
			_ = cmd.Process.Kill()
			return fmt.Errorf("not ready after %s; see %s", startTimeout, logFile.Name())
		}
	}
}

func serve(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	env, err := testenv.Start(ctx, testenv.Options{ContainerLog: containerLog})
	cancel()
	if err != nil {
		return err
	}
	defer env.Stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := copyFile(env.Kubeconfig, filepath.Join(dir, "kubeconfig")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	fmt.Printf("ready in %s; component logs in %s\n", env.StartupTime.Round(time.Millisecond), env.Dir)
	<-sigs
	_ = os.Remove(filepath.Join(dir, "pid"))
	_ = os.Remove(filepath.Join(dir, "kubeconfig"))
	return nil
}

func down(dir string) error {
	pid := running(dir)
	if pid == 0 {
		fmt.Println("local control plane is not running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("local control plane stopped")
	return nil
}

func status(dir string) {
	if pid := running(dir); pid != 0 {
		fmt.Printf("running (pid %d)\nexport KUBECONFIG=%s\n", pid, filepath.Join(dir, "kubeconfig"))
		return
	}
	fmt.Println("not running")
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// containerLog is what every container on the local control plane's fake
// node prints: kwok runs no containers, so the log says so.
var containerLog = []string{
	"(kwok runs no containers: every container on the local control plane prints these lines)",
	"deploying...",
	"deployed",
}
