package gate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/shared/gate"
	"horizon/shared/sshx"
)

// upload puts one cloud-init snippet on a sandbox node over SFTP, as a machine build does.
func upload(ctx context.Context, sb *pvetest.Sandbox, node, name string) error {
	n := sb.Cluster("demo").Node(node)
	c, err := sshx.Dial(ctx, sshx.Config{Addr: n.SSHAddr(), User: "root", Signer: sb.NodeSigner, HostKey: n.HostKeyFingerprint()})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Upload(ctx, "/var/lib/vz/snippets/"+name+".yaml", strings.NewReader("#cloud-config\n"), 0o640)
}

// TestGateKeepsTheSandboxFromSeeingConcurrentUploads: 8 concurrent workers build 20 machines on
// each of 3 nodes through the gate; the sandbox, which refuses a second concurrent upload on a
// node, never refuses one, and different nodes do upload at the same time.
func TestGateKeepsTheSandboxFromSeeingConcurrentUploads(t *testing.T) {
	t.Parallel()
	sb := pvetest.Start(t, func(c *pve.Config) { c.UploadMinDuration = 15 * time.Millisecond })
	g, _, _ := newGate(t, gate.Config{TTL: 5 * time.Second})
	nodes := []string{"pve1", "pve2", "pve3"}
	const perNode, workers = 20, 8
	builds := make(chan string, perNode*len(nodes))
	for i := 0; i < perNode; i++ {
		for _, n := range nodes {
			builds <- fmt.Sprintf("%s/%d", n, i)
		}
	}
	close(builds)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, perNode*len(nodes))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range builds {
				node, _, _ := strings.Cut(b, "/")
				owner := "build-" + strings.ReplaceAll(b, "/", "-")
				var lease *gate.Lease
				for {
					l, err := g.Acquire(ctx, node, owner, time.Second)
					if err == nil {
						lease = l
						break
					}
					if !gate.IsBusy(err) {
						errs <- err
						return
					}
					// Busy and not first in line: Asynq would retry this task shortly.
					time.Sleep(5 * time.Millisecond)
				}
				err := upload(lease.Context(), sb, node, owner)
				if _, rerr := lease.Release(ctx); rerr != nil && err == nil {
					err = rerr
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", b, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var all []pve.Upload
	for _, name := range nodes {
		n := sb.Cluster("demo").Node(name)
		if got := n.RejectedUploads(); got != 0 {
			t.Errorf("%s refused %d concurrent uploads: two builds held the node at once", name, got)
		}
		if got := len(n.Uploads()); got != perNode {
			t.Errorf("%s saw %d uploads, want %d", name, got, perNode)
		}
		all = append(all, n.Uploads()...)
	}
	if !overlapping(all) {
		t.Error("no two uploads on different nodes ever overlapped: nodes did not build in parallel")
	}
}

// TestSandboxSeesConcurrentUploadsWithoutTheGate is the control: without the gate, the
// sandbox does catch two builds on one node.
func TestSandboxSeesConcurrentUploadsWithoutTheGate(t *testing.T) {
	t.Parallel()
	sb := pvetest.Start(t, func(c *pve.Config) { c.UploadMinDuration = 200 * time.Millisecond })
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = upload(context.Background(), sb, "pve1", fmt.Sprintf("u%d", i))
		}()
	}
	wg.Wait()
	if sb.Cluster("demo").Node("pve1").RejectedUploads() == 0 || errors.Join(errs...) == nil {
		t.Fatal("four simultaneous uploads on one node were all accepted: the detector is blind")
	}
}

func overlapping(us []pve.Upload) bool {
	for i := range us {
		for j := range us {
			if i != j && us[i].Start.Before(us[j].End) && us[j].Start.Before(us[i].End) {
				return true
			}
		}
	}
	return false
}
