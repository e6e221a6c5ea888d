package pve

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// TestGoProxmoxDrivesTheSandbox runs the calls Horizon makes through go-proxmox itself, so
// that every answer decodes into go-proxmox's own types.
func TestGoProxmoxDrivesTheSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := ctxT(t)
	client := pveClient(t, e.c)

	v, err := client.Version(ctx)
	if err != nil || v.Release != pveRelease {
		t.Fatalf("Version: %+v, %v", v, err)
	}

	nodes, err := client.Nodes(ctx)
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	if len(nodes) != 3 || nodes[0].Node != "pve1" || nodes[0].Status != "online" || nodes[0].SSLFingerprint != e.c.CertFingerprint() {
		t.Fatalf("Nodes: got %+v", nodes[0])
	}
	node, err := client.Node(ctx, "pve1")
	if err != nil || node.CPUInfo.CPUs == 0 || node.Memory.Total == 0 {
		t.Fatalf("Node: %+v, %v", node, err)
	}

	cluster, err := client.Cluster(ctx)
	if err != nil || cluster.Name != "demo" || len(cluster.Nodes) != 3 || cluster.Quorate != 1 {
		t.Fatalf("Cluster: %+v, %v", cluster, err)
	}

	// Pools.
	if err := client.NewPool(ctx, "web", "web servers"); err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	pools, err := client.Pools(ctx)
	if err != nil || !slices.ContainsFunc(pools, func(p *proxmox.Pool) bool { return p.PoolID == "web" }) {
		t.Fatalf("Pools: %v, %v", pools, err)
	}

	// Create, with the options Horizon's templates use.
	id, err := cluster.NextID(ctx)
	if err != nil || id != 100 {
		t.Fatalf("NextID: %d, %v", id, err)
	}
	task, err := node.NewVirtualMachine(ctx, id,
		proxmox.VirtualMachineOption{Name: "name", Value: "web-1"},
		proxmox.VirtualMachineOption{Name: "cores", Value: 2},
		proxmox.VirtualMachineOption{Name: "memory", Value: 2048},
		proxmox.VirtualMachineOption{Name: "scsihw", Value: "virtio-scsi-pci"},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:8"},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"},
		proxmox.VirtualMachineOption{Name: "tags", Value: "Web,prod;web"},
		proxmox.VirtualMachineOption{Name: "onboot", Value: 1},
		proxmox.VirtualMachineOption{Name: "startup", Value: "order=2,up=30"},
		proxmox.VirtualMachineOption{Name: "pool", Value: "web"},
	)
	if err != nil {
		t.Fatalf("NewVirtualMachine: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("create task: %v", err)
	}
	vm, err := node.VirtualMachine(ctx, id)
	if err != nil {
		t.Fatalf("VirtualMachine: %v", err)
	}
	cfg := vm.VirtualMachineConfig
	if vm.Name != "web-1" || *cfg.Cores != 2 || cfg.Tags != "prod;web" || !bool(cfg.OnBoot) || cfg.SCSIs["scsi0"] != "local-lvm:vm-100-disk-0,size=8G" {
		t.Fatalf("config: name %q cores %d tags %q onboot %v scsi0 %q", vm.Name, *cfg.Cores, cfg.Tags, cfg.OnBoot, cfg.SCSIs["scsi0"])
	}
	if !strings.HasPrefix(cfg.Nets["net0"], "virtio=BC:24:11:") {
		t.Fatalf("net0 %q: want a generated MAC", cfg.Nets["net0"])
	}
	if bool(vm.Template) || vm.IsRunning() {
		t.Fatalf("new VM: template %v running %v", vm.Template, vm.IsRunning())
	}

	// Config, async and sync.
	task, err = vm.Config(ctx, proxmox.VirtualMachineOption{Name: "description", Value: "hello"})
	if err != nil {
		t.Fatalf("Config: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("config task: %v", err)
	}
	if err := vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 4}); err != nil {
		t.Fatalf("ConfigSync: %v", err)
	}
	task, err = vm.ResizeDisk(ctx, "scsi0", "+2G")
	if err != nil {
		t.Fatalf("ResizeDisk: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("resize task: %v", err)
	}
	if err := vm.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if vm.VirtualMachineConfig.Description != "hello" || *vm.VirtualMachineConfig.Cores != 4 || vm.MaxDisk != 10<<30 {
		t.Fatalf("after config: %+v maxdisk %d", vm.VirtualMachineConfig, vm.MaxDisk)
	}

	// Start and stop.
	task, err = vm.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("start task: %v", err)
	}
	if err := vm.Ping(ctx); err != nil || !vm.IsRunning() {
		t.Fatalf("after start: running %v, %v", vm.IsRunning(), err)
	}
	task, err = vm.Stop(ctx)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("stop task: %v", err)
	}

	// Template and a linked clone on another node is refused (local storage), a full one works.
	task, err = vm.ConvertToTemplate(ctx)
	if err != nil {
		t.Fatalf("ConvertToTemplate: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("template task: %v", err)
	}
	newid, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{Name: "web-2", Pool: "web"})
	if err != nil || newid != 101 {
		t.Fatalf("Clone: %d, %v", newid, err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("clone task: %v", err)
	}
	clone, err := node.VirtualMachine(ctx, newid)
	if err != nil || clone.Name != "web-2" || clone.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:base-100-disk-0/vm-101-disk-0,size=10G" {
		t.Fatalf("clone: %+v, %v", clone, err)
	}
	_, _, err = vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 102, Target: "pve2"})
	if err == nil || !strings.Contains(err.Error(), "local storage") {
		t.Fatalf("linked clone to another node: got %v, want the local storage refusal", err)
	}

	// Cluster resources see both, with template flags and the pool.
	res, err := cluster.Resources(ctx, "vm")
	if err != nil || len(res) != 2 {
		t.Fatalf("Resources: %v, %v", res, err)
	}
	if res[0].ID != "qemu/100" || res[0].Template != 1 || res[1].Pool != "web" || res[1].Template != 0 {
		t.Fatalf("Resources: %+v %+v", res[0], res[1])
	}
	pool, err := client.Pool(ctx, "web")
	if err != nil || len(pool.Members) != 2 {
		t.Fatalf("Pool: %+v, %v", pool, err)
	}
	if err := pool.Update(ctx, &proxmox.PoolUpdateOption{VirtualMachines: "100", Delete: true}); err != nil {
		t.Fatalf("Pool.Update: %v", err)
	}
	if pool, err = client.Pool(ctx, "web"); err != nil || len(pool.Members) != 1 || pool.Members[0].VMID != 101 {
		t.Fatalf("Pool after removing 100: %+v, %v", pool, err)
	}

	// Storages and content.
	storages, err := node.Storages(ctx)
	if err != nil || len(storages) != 3 {
		t.Fatalf("Storages: %v, %v", storages, err)
	}
	//lint:ignore SA1019 the sandbox must answer the fetch that go-proxmox clients still make
	st, err := node.Storage(ctx, "local-lvm")
	if err != nil || st.Used != 20<<30 || st.Total == 0 {
		t.Fatalf("Storage: %+v, %v", st, err)
	}
	content, err := st.GetContent(ctx)
	if err != nil || len(content) != 2 {
		t.Fatalf("GetContent: %+v, %v", content, err)
	}

	// Delete the clone, then the template.
	task, err = clone.Delete(ctx, nil)
	if err != nil {
		t.Fatalf("Delete clone: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("delete task: %v", err)
	}
	task, err = vm.Delete(ctx, nil)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := task.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("delete task: %v", err)
	}
	if _, err := node.VirtualMachine(ctx, id); !errors.Is(err, proxmox.ErrNotFound) {
		t.Fatalf("deleted VM: got %v, want ErrNotFound", err)
	}
	if len(e.c.VMs()) != 0 {
		t.Fatalf("VMs left: %v", e.c.VMs())
	}

	// A failed task is a *TaskFailedError for go-proxmox.
	tmpl, err := node.NewVirtualMachine(ctx, 200, proxmox.VirtualMachineOption{Name: "template", Value: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.Wait(ctx, 10*time.Millisecond, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tv, err := node.VirtualMachine(ctx, 200)
	if err != nil {
		t.Fatal(err)
	}
	task, err = tv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = task.Wait(ctx, 10*time.Millisecond, 10*time.Second)
	if !proxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "template") {
		t.Fatalf("start of a template: got %v, want a failed task", err)
	}
}
