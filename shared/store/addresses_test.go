package store_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func TestAddressAttachIsExclusiveUnderConcurrency(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	n, err := store.NetworkCreate(ctx, db, horizon.Network{Name: "n", CIDR: netip.MustParsePrefix("10.0.0.0/24"), Gateway: netip.MustParseAddr("10.0.0.1"), Bridge: "vmbr0"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.AddressCreate(ctx, db, horizon.Address{NetworkID: n.ID, Name: "a", IP: netip.MustParseAddr("10.0.0.5")},
		store.Activity{Action: "address.create", ObjectType: "address"})
	if err != nil {
		t.Fatal(err)
	}
	const attempts = 16
	execs := newExecutions(t, db, attempts)
	var wg sync.WaitGroup
	results := make(chan error, attempts)
	start := make(chan struct{})
	for i := 0; i < attempts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results <- store.AddressAttach(ctx, db, a.ID, execs[i].ID)
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	wins, conflicts := 0, 0
	for err := range results {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, horizon.ErrConflict):
			conflicts++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 || conflicts != attempts-1 {
		t.Fatalf("got %d wins and %d conflicts, want exactly 1 win", wins, conflicts)
	}
	got, err := store.AddressGet(ctx, db, n.ID, a.ID)
	if err != nil || got.State() != "attached" {
		t.Fatalf("address state %q (%v), want attached", got.State(), err)
	}
	if err := store.AddressDelete(ctx, db, n.ID, a.ID); !errors.Is(err, horizon.ErrConflict) {
		t.Fatalf("deleting an attached address: %v, want a conflict", err)
	}
	if err := store.AddressDetach(ctx, db, *got.ExecutionID); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.AddressGet(ctx, db, n.ID, a.ID); got.State() != "free" {
		t.Fatalf("after detach: %q, want free", got.State())
	}
}
