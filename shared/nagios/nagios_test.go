package nagios_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/nagios"
	"horizon/shared/nagios/nagiostest"
	"horizon/shared/sshx"
	"horizon/shared/sshx/sshxtest"
)

func TestReadsThroughTheCGIs(t *testing.T) {
	t.Parallel()
	for _, digest := range []bool{false, true} {
		n := nagiostest.Start(t, nagiostest.Options{Digest: digest})
		c := n.Client()
		cmds, err := c.Commands(t.Context())
		if err != nil || !slices.Contains(cmds, "check-host-alive") {
			t.Fatalf("digest %v: commands %v, %v", digest, cmds, err)
		}
		groups, err := c.Hostgroups(t.Context())
		if err != nil || !slices.Contains(groups, nagiostest.Hostgroup) || slices.Contains(groups, nagiostest.EmptyHostgroup) {
			t.Fatalf("hostgrouplist: %v, %v (Nagios leaves empty groups out)", groups, err)
		}
		for name, want := range map[string]bool{nagiostest.Hostgroup: true, nagiostest.EmptyHostgroup: true, "no-such-group": false} {
			if got, err := c.HostgroupExists(t.Context(), name); err != nil || got != want {
				t.Errorf("HostgroupExists(%s) = %v, %v; want %v", name, got, err, want)
			}
		}
		wrong := *c
		wrong.Password = "wrong"
		if _, err := wrong.Commands(t.Context()); !errors.Is(err, nagios.ErrUnauthorized) {
			t.Errorf("digest %v: wrong password: %v, want ErrUnauthorized", digest, err)
		}
		// A server that answers, wrongly, is unavailable but not unreachable: the operator's to fix.
		misplaced := *c
		misplaced.URL += "/no-such-dir"
		if _, err := misplaced.Commands(t.Context()); !errors.Is(err, nagios.ErrUnavailable) || errors.Is(err, nagios.ErrUnreachable) {
			t.Errorf("digest %v: a wrong CGI path: %v, want ErrUnavailable only", digest, err)
		}
	}
	down := nagios.Client{URL: "http://127.0.0.1:1/cgi-bin/nagios4", Username: "u", Password: "p"}
	if _, err := down.Commands(t.Context()); !errors.Is(err, nagios.ErrUnavailable) || !errors.Is(err, nagios.ErrUnreachable) {
		t.Errorf("nothing listening: %v, want ErrUnavailable and ErrUnreachable", err)
	}
}

func hosts(stack string, n int, checks ...nagios.Check) []nagios.Host {
	var out []nagios.Host
	for i := range n {
		name := stack + "-web-" + string(rune('0'+i))
		out = append(out, nagios.Host{Name: name, Address: "10.9.0." + string(rune('1'+i)), Alias: stack + " web " + string(rune('0'+i)),
			Hostgroups: []string{nagiostest.EmptyHostgroup}, Checks: checks})
	}
	return out
}

func TestPublishUnpublish(t *testing.T) {
	t.Parallel()
	n := nagiostest.Start(t, nagiostest.Options{})
	id := uuid.New()
	file := nagios.Render("shop", hosts("shop", 2, nagios.Check{Command: "check_ping", Args: []string{"100.0,20%", "500.0,60%"}}, nagios.Check{Command: "check_ping", Args: []string{"1,1%", "2,2%"}}))
	if err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(id), file); err != nil {
		t.Fatal(err)
	}
	n.WaitHosts(t, func(h []string) bool { return slices.Contains(h, "shop-web-0") && slices.Contains(h, "shop-web-1") })
	svc, err := n.Client().Services(t.Context())
	if err != nil || !slices.Equal(svc["shop-web-1"], []string{"check_ping", "check_ping 2"}) {
		t.Fatalf("services: %v, %v", svc, err)
	}
	if ok, err := n.Client().HostgroupExists(t.Context(), nagiostest.EmptyHostgroup); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(id), nil); err != nil {
		t.Fatal(err)
	}
	n.WaitHosts(t, func(h []string) bool { return !slices.Contains(h, "shop-web-0") })
	if _, err := os.Stat(filepath.Join(n.Dir, nagios.FileName(id))); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}
	// Unpublishing what is not published is a no-op.
	if err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(id), nil); err != nil {
		t.Fatal(err)
	}
}

func TestBrokenFileIsRestored(t *testing.T) {
	t.Parallel()
	n := nagiostest.Start(t, nagiostest.Options{})
	id := uuid.New()
	good := nagios.Render("shop", hosts("shop", 1))
	if err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(id), good); err != nil {
		t.Fatal(err)
	}
	n.WaitHosts(t, func(h []string) bool { return slices.Contains(h, "shop-web-0") })
	// A service whose command Nagios does not define: nagios -v refuses the configuration.
	bad := nagios.Render("shop", hosts("shop", 2, nagios.Check{Command: "check_nothing_such"}))
	err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(id), bad)
	var ve *nagios.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(ve.Line, "check_nothing_such") {
		t.Fatalf("publish of a broken file: %v, want Nagios's error line naming the command", err)
	}
	if got, _ := os.ReadFile(filepath.Join(n.Dir, nagios.FileName(id))); string(got) != string(good) {
		t.Fatalf("the previous file was not restored:\n%s", got)
	}
	// A broken first publish leaves no file at all.
	other := uuid.New()
	if err := nagios.Publish(t.Context(), n.Target(), nagios.FileName(other), bad); !errors.As(err, &ve) {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(n.Dir, nagios.FileName(other))); !os.IsNotExist(err) {
		t.Fatalf("a refused first file stayed: %v", err)
	}
	entries, _ := os.ReadDir(n.Dir)
	if len(entries) != 1 {
		t.Fatalf("the directory holds %d files, want the one good file", len(entries))
	}
	if h := n.WaitHosts(t, func([]string) bool { return true }); slices.Contains(h, "shop-web-1") {
		t.Fatalf("Nagios was reloaded onto the broken file: %v", h)
	}
}

func TestConcurrentPublishesBothLand(t *testing.T) {
	t.Parallel()
	n := nagiostest.Start(t, nagiostest.Options{})
	var mu sync.Mutex // the caller's gate: publishes to one server never overlap
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, stack := range []string{"alpha", "beta"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			errs[i] = nagios.Publish(t.Context(), n.Target(), nagios.FileName(uuid.New()), nagios.Render(stack, hosts(stack, 1)))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	n.WaitHosts(t, func(h []string) bool { return slices.Contains(h, "alpha-web-0") && slices.Contains(h, "beta-web-0") })
}

func TestWrongHostKeyRefusesTheUpload(t *testing.T) {
	t.Parallel()
	n := nagiostest.Start(t, nagiostest.Options{})
	target := n.Target()
	impostor := sshxtest.Start(t, sshxtest.Options{})
	target.SSH.Addr = impostor.Addr // answers with another host key than the pinned one
	err := nagios.Publish(t.Context(), target, nagios.FileName(uuid.New()), nagios.Render("x", hosts("x", 1)))
	var hk *sshx.HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("publish to a server with another host key: %v, want *sshx.HostKeyError", err)
	}
	if impostor.AuthAttempts() != 0 {
		t.Fatal("credentials were offered to a server with the wrong host key")
	}
	if entries, _ := os.ReadDir(n.Dir); len(entries) != 0 {
		t.Fatal("a file was written")
	}
}
