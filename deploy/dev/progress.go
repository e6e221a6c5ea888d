package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress narrates `up`: each step says what it does and how long it usually takes before it
// starts, says so again every `every` while it runs (a cold machine spends minutes compiling
// without a word from the Go tool or npm), and says how long it took. Expectations are for a
// cold machine (empty module, build and npm caches); a warm one takes seconds.
type progress struct {
	out   io.Writer
	total int
	every time.Duration
	n     int
}

// step runs fn as the next step.
func (p *progress) step(what, expect string, fn func() error) error {
	p.n++
	if expect != "" {
		expect = " (" + expect + ")"
	}
	fmt.Fprintf(p.out, "up [%d/%d] %s%s\n", p.n, p.total, what, expect)
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(p.out, "up [%d/%d] … still %s (%s so far)\n", p.n, p.total, what, time.Since(start).Round(time.Second))
			}
		}
	}()
	err := fn()
	close(done)
	wg.Wait()
	if err != nil {
		return err
	}
	fmt.Fprintf(p.out, "up [%d/%d] done in %s\n", p.n, p.total, time.Since(start).Round(100*time.Millisecond))
	return nil
}
