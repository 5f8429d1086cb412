package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// logTailLines is how many log lines an error about a component quotes.
const logTailLines = 30

// process is one child component: its command, its log file and its exit.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string

	done chan struct{} // closed once the process has exited
	err  error         // exit status, valid after done is closed
}

// startProcess runs bin with args in dir, its stdout and stderr appended to
// dir/<name>.log. The child gets its own process group, which stop kills
// whole, and on Linux dies with SIGKILL if the test binary dies first.
func startProcess(dir, name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))
	if err := spawn(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error quoting the log if the process has exited, else nil.
func (p *process) exited() error {
	select {
	case <-p.done:
		status := "exited"
		if p.err != nil {
			status = "exited: " + p.err.Error()
		}
		return fmt.Errorf("%s %s\n%s", p.name, status, p.logTail())
	default:
		return nil
	}
}

// stop kills the process group and waits up to 10s for the process to exit.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = killGroup(p.cmd.Process)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// logTail returns the last logTailLines lines of the log, framed for an error.
func (p *process) logTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- last %d lines of %s ---\n", len(lines), p.logPath)
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n--- end of log ---")
	return b.String()
}

// firstExited returns the exit error of the first of procs that has exited.
func firstExited(procs ...*process) error {
	var errs []error
	for _, p := range procs {
		if p == nil {
			continue
		}
		if err := p.exited(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NOTE: Pdeathsig fires when the OS thread that forked the child exits, not
// when the process does. The Go runtime ends a thread when a goroutine that
// locked it returns, so children are forked from one goroutine that locks its
// thread and never returns; its thread lives as long as the test binary.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread()
			for req := range spawnReqs {
				req.err <- req.cmd.Start()
			}
		}()
	})
	req := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnReqs <- req
	return <-req.err
}
