package pve

import (
	"context"
	"sync"
	"time"
)

// knobs are the sandbox-wide fault knobs: latency, failing calls, hanging tasks and
// failing downloads. Node and certificate knobs live on the cluster.
type knobs struct {
	mu            sync.Mutex
	latency       map[string]time.Duration // "" is global, else "METHOD /pattern"
	fails         map[string]*failure
	hung          map[string]chan struct{} // task type → closed by release
	downloadFails int
}

type failure struct {
	left    int
	status  int
	message string
}

func newKnobs(latency time.Duration) *knobs {
	return &knobs{
		latency: map[string]time.Duration{"": latency},
		fails:   map[string]*failure{},
		hung:    map[string]chan struct{}{},
	}
}

func (k *knobs) setLatency(route string, d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.latency[route] = d
}

func (k *knobs) failNext(route string, n, status int, message string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n <= 0 {
		delete(k.fails, route)
		return
	}
	k.fails[route] = &failure{left: n, status: status, message: message}
}

// before runs ahead of a call of the route: it sleeps the configured latency and returns
// the injected failure, if one is armed.
func (k *knobs) before(ctx context.Context, route string) error {
	k.mu.Lock()
	d := k.latency[""] + k.latency[route]
	var err error
	if f := k.fails[route]; f != nil {
		f.left--
		if f.left <= 0 {
			delete(k.fails, route)
		}
		err = &apiError{status: f.status, message: f.message + "\n"}
	}
	k.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (k *knobs) hang(taskType string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.hung[taskType]; !ok {
		k.hung[taskType] = make(chan struct{})
	}
}

func (k *knobs) release(taskType string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ch, ok := k.hung[taskType]; ok {
		close(ch)
		delete(k.hung, taskType)
	}
}

// hangGate returns a channel a task of the type must wait on, or nil when it may go on.
func (k *knobs) hangGate(taskType string) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hung[taskType]
}

func (k *knobs) failDownloads(n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.downloadFails = max(n, 0)
}

// takeDownloadFailure reports whether this download must fail, consuming one armed failure.
func (k *knobs) takeDownloadFailure() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.downloadFails == 0 {
		return false
	}
	k.downloadFails--
	return true
}
