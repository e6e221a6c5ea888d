package store_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestVMIDsOfManyDeploysAtOnceAreAllAllocated: sixty deploys allocate on one cluster at once,
// each in a transaction that stays open a moment after its allocation, as a deploy's does. Each
// gets an id, none twice, and they are the lowest ones. Without the allocation lock they all
// raced for the same lowest id, and the ones that lost twenty times failed the deploy with a 500.
func TestVMIDsOfManyDeploysAtOnceAreAllAllocated(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	const deploys = 60
	var srv horizon.ProxmoxServer
	newISO(t, db, &srv, "boot", "pve1", "local") // makes the server
	execs := newExecutions(t, db, deploys)
	ids := make([]int, deploys)
	errs := make([]error, deploys)
	var wg sync.WaitGroup
	for i, e := range execs {
		wg.Go(func() {
			errs[i] = store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
				var err error
				ids[i], err = store.VMIDAllocate(ctx, tx, srv.ID, e.ID, []int{105})
				time.Sleep(5 * time.Millisecond)
				return err
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("deploy %d: %v", i, err)
		}
	}
	slices.Sort(ids)
	want := []int{}
	for id := 100; len(want) < deploys; id++ {
		if id != 105 { // in use in the cluster
			want = append(want, id)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
}

// newServer registers a Proxmox server (a cluster, for VM ids) named name.
func newServer(t *testing.T, db *pgxpool.Pool, name string) horizon.ProxmoxServer {
	t.Helper()
	s, err := store.ProxmoxServerCreate(context.Background(), db, horizon.ProxmoxServer{Name: name, APIURL: "https://" + name + ".example.org:8006",
		TokenID: "h@pve!t", TokenSecret: []byte("sealed"), TLSFingerprint: "AB", SSHUser: "root", SSHPrivateKey: []byte("sealed"),
		Nodes: []horizon.ProxmoxNode{{Name: "pve1", Online: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeploysOnTheSameClustersInOppositeOrdersDoNotDeadlock: pairs of deploys, all at once,
// each with a machine on cluster a and one on cluster b, one of each pair listing a's machine
// first and the other b's, do what a deploy's reserve does: lock the clusters of all their
// machines (VMIDLock), then allocate each machine's id in the order listed. Every deploy gets
// its ids in its first transaction: no 40P01, and WithTx never had to run one again after
// Postgres broke a deadlock. VMIDLock sorts the clusters for this; locked in the order the
// machines are listed, a's-first and b's-first deploys each hold one cluster and wait for the
// other, and a deadlock costs a deploy a second (deadlock_timeout) and a retry, or, three
// times over, fails it with a 500.
func TestDeploysOnTheSameClustersInOppositeOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	const deploys = 40 // 20 pairs
	a, b := newServer(t, db, "a-"+t.Name()), newServer(t, db, "b-"+t.Name())
	execs := newExecutions(t, db, 2*deploys)
	attempts := make([]atomic.Int32, deploys)
	errs := make([]error, deploys)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range deploys {
		servers := []uuid.UUID{a.ID, b.ID}
		if i%2 == 1 {
			servers = []uuid.UUID{b.ID, a.ID}
		}
		machines := execs[2*i : 2*i+2]
		wg.Go(func() {
			<-start
			errs[i] = store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
				attempts[i].Add(1)
				if err := store.VMIDLock(ctx, tx, servers...); err != nil {
					return err
				}
				for j, e := range machines {
					if _, err := store.VMIDAllocate(ctx, tx, servers[j], e.ID, nil); err != nil {
						return err
					}
				}
				time.Sleep(time.Millisecond) // the rest of the deploy's transaction
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("deploy %d: %v", i, err)
		}
	}
	for i := range attempts {
		if n := attempts[i].Load(); n != 1 {
			t.Errorf("deploy %d took %d transactions: Postgres broke a deadlock", i, n)
		}
	}
	var allocated int
	if err := db.QueryRow(ctx, `SELECT count(DISTINCT (server_id, vmid)) FROM vm_ids WHERE server_id IN ($1, $2)`, a.ID, b.ID).Scan(&allocated); err != nil {
		t.Fatal(err)
	}
	if allocated != 2*deploys {
		t.Fatalf("%d VM ids allocated, want %d", allocated, 2*deploys)
	}
}
