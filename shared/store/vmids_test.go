package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
