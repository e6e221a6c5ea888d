package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// newISO makes a Proxmox server (nodes pve1, pve2; storages local and shared) and an ISO template,
// and inserts an ISO of it built on node with what it built on storage.
func newISO(t *testing.T, db *pgxpool.Pool, server *horizon.ProxmoxServer, name, node, storage string) horizon.ISO {
	t.Helper()
	ctx := context.Background()
	if server.ID == uuid.Nil {
		s, err := store.ProxmoxServerCreate(ctx, db, horizon.ProxmoxServer{Name: "lab-" + t.Name(), APIURL: "https://pve.example.org:8006",
			TokenID: "h@pve!t", TokenSecret: []byte("sealed"), TLSFingerprint: "AB", SSHUser: "root", SSHPrivateKey: []byte("sealed"),
			Nodes: []horizon.ProxmoxNode{{Name: "pve1", Online: true}, {Name: "pve2", Online: true}},
			Storages: []horizon.ProxmoxStorage{{Name: "local", Type: "dir", Content: []string{"iso"}, Nodes: []string{"pve1", "pve2"}},
				{Name: "shared", Type: "nfs", Content: []string{"iso"}, Shared: true, Nodes: []string{"pve1", "pve2"}}}})
		if err != nil {
			t.Fatal(err)
		}
		*server = s
	}
	tmpl, err := store.ISOTemplateCreate(ctx, db, horizon.ISOTemplate{Name: name, Kind: horizon.ISOKindISO, Active: true},
		horizon.ISOTemplateVersion{Spec: []byte(`{"source":{}}`), SpecHash: "sha256:x"})
	if err != nil {
		t.Fatal(err)
	}
	iso, err := store.ISOInsert(ctx, db, horizon.ISO{Name: name, ISOTemplateID: tmpl.ID, ISOTemplateVersion: 1, Kind: horizon.ISOKindISO,
		ServerID: server.ID, Node: node, Storage: storage, ArtifactStorage: storage, ConfigHash: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	return iso
}

func TestISOVMIDsAreReservedAgainstStacksAndOtherISOs(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	var srv horizon.ProxmoxServer
	a := newISO(t, db, &srv, "a", "pve1", "local")
	b := newISO(t, db, &srv, "b", "pve1", "local")
	if err := store.VMIDReserveISO(ctx, db, srv.ID, a.ID, []int{9000, 9101}); err != nil {
		t.Fatal(err)
	}
	if err := store.VMIDReserveISO(ctx, db, srv.ID, a.ID, []int{9000, 9101}); err != nil {
		t.Fatalf("reserving its own ids again: %v", err)
	}
	var taken *store.VMIDTakenError
	if err := store.VMIDReserveISO(ctx, db, srv.ID, b.ID, []int{9101}); !errors.As(err, &taken) || taken.VMID != 9101 || taken.Holder != "ISO a" {
		t.Fatalf("another ISO's id: %v", err)
	}
	// A stack's allocation skips the ISO's ids; an ISO cannot take a stack's.
	execs := newExecutions(t, db, 1)
	if err := store.VMIDReserveISO(ctx, db, srv.ID, a.ID, []int{100}); err != nil { // now a holds 100 only
		t.Fatal(err)
	}
	vmid, err := store.VMIDAllocate(ctx, db, srv.ID, execs[0].ID, nil)
	if err != nil || vmid != 101 {
		t.Fatalf("a stack's id next to an ISO's: %d, %v", vmid, err)
	}
	if err := store.VMIDReserveISO(ctx, db, srv.ID, b.ID, []int{101}); !errors.As(err, &taken) || taken.Holder != "stack s (web[0])" {
		t.Fatalf("a stack's id: %v", err)
	}
	if err := store.VMIDReleaseISO(ctx, db, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := store.VMIDReserveISO(ctx, db, srv.ID, b.ID, []int{100, 9000}); err != nil {
		t.Fatalf("released ids: %v", err)
	}
}

func TestISOOutputsStateAndAvailability(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	var srv horizon.ProxmoxServer
	local := newISO(t, db, &srv, "local", "pve1", "local")
	shared := newISO(t, db, &srv, "shared", "pve1", "shared")
	for _, o := range []struct{ key, clone, value string }{
		{"image", "", `{"volid":"local:iso/a.iso","storage":"local","checksum":"ab","checksum_algorithm":"sha256","size":1,"ctime":2,"verified_at":"2026-01-01T00:00:00Z"}`},
		{"", "web-1", `{"name":"web-1","vmid":9101,"node":"pve1","started":true}`},
		{"", "web-2", `{"name":"web-2","vmid":9102,"node":"pve1","started":false}`},
	} {
		if err := store.ISOOutputSet(ctx, db, local.ID, o.key, o.clone, o.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.ISOOutputSet(ctx, db, local.ID, "", "web-2", nil); err != nil {
		t.Fatal(err)
	}
	got, err := store.ISOGet(ctx, db, local.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outputs.Image == nil || got.Outputs.Image.VolID != "local:iso/a.iso" || len(got.Outputs.Clones) != 1 || !got.Outputs.Clones["web-1"].Started {
		t.Fatalf("outputs %+v", got.Outputs)
	}
	for _, i := range []horizon.ISO{local, shared} {
		if _, err := store.ISOSetState(ctx, db, horizon.ISOStateChange{ISOID: i.ID, To: horizon.ISOBuilt}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ = store.ISOGet(ctx, db, local.ID); got.BuiltHash == nil || *got.BuiltHash != "c1" || got.Outdated() {
		t.Fatalf("built: %+v", got)
	}
	hs, _, err := store.ISOHistory(ctx, db, local.ID, store.Page{Limit: 10})
	if err != nil || len(hs) != 1 || *hs[0].From != horizon.ISOBuilding || hs[0].To != horizon.ISOBuilt {
		t.Fatalf("history %+v %v", hs, err)
	}
	names := func(node string) []string {
		is, _, err := store.ISOList(ctx, db, store.ISOFilter{ServerID: &srv.ID, AvailableOn: node}, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range is {
			out = append(out, i.Name)
		}
		return out
	}
	if got := names("pve2"); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("available on pve2: %v", got)
	}
	if got := names("pve1"); !slices.Equal(got, []string{"local", "shared"}) {
		t.Errorf("available on pve1: %v", got)
	}
	if others, err := store.ISOsWithImage(ctx, db, srv.ID, "local:iso/a.iso", shared.ID); err != nil || len(others) != 1 || others[0].ID != local.ID {
		t.Errorf("ISOs with the image: %v %v", others, err)
	}
}
