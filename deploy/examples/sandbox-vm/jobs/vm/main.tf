# One Proxmox VE VM, made with built-in Terraform only: terraform_data resources whose
# local-exec provisioners call the PVE API with pve-vm.sh (bash and curl). No provider is
# downloaded, so this runs anywhere Terraform does — against the sandbox in tests and the demo,
# and against a real cluster alike.
#
#   - terraform_data.teardown deletes the VM (destroy-time provisioner). It is a resource of its
#     own, created before the VM and with no create-time provisioner, because Terraform never
#     runs the destroy-time provisioners of a tainted resource — and a resource whose creation
#     failed or was interrupted halfway (the VM made, the start failed) is tainted. Here the VM
#     is deleted whatever happened to its creation.
#   - terraform_data.vm creates the VM and starts it ("pve-vm.sh create"), adopting a VM already
#     there with this VMID and name — an interrupted apply must not build a second VM, and a
#     tainted vm is re-created by adoption — and refusing any other VM with that VMID.
#   - terraform_data.config writes the rest (name, cores, memory, network, cloud-init, tags,
#     startup) whenever it changes, so raising memory re-applies in place. PVE applies what
#     cannot be hot-plugged at the next boot. The pool is set at creation only.
#
# Changing the node or the VMID replaces the VM.

terraform {
  required_version = ">= 1.5"
}

locals {
  script = "${path.module}/pve-vm.sh"
  identity = {
    VM_NODE = var.horizon_node
    VM_ID   = tostring(var.horizon_vmid)
  }
  config = {
    VM_NAME       = var.horizon_name
    VM_POOL       = var.horizon_pool
    VM_CORES      = tostring(var.cores)
    VM_MEMORY     = tostring(var.memory_mb)
    VM_NET0       = "virtio,bridge=${var.bridge}"
    VM_IPCONFIG0  = "ip=${var.horizon_address.ip}/${var.horizon_address.prefix},gw=${var.horizon_address.gateway}"
    VM_NAMESERVER = join(" ", var.horizon_address.dns)
    VM_CICUSTOM   = "user=${var.horizon_cloud_init}"
    VM_TAGS       = join(";", var.horizon_tags)
    VM_STARTUP    = var.horizon_startup_order == null ? "" : "order=${var.horizon_startup_order}"
  }
}

resource "terraform_data" "teardown" {
  triggers_replace = local.identity
  # Destroy-time provisioners may only read self: keep what destroy needs in the input. The
  # name moves in place; destroy deletes only a VM that still has it.
  input = merge(local.identity, { VM_NAME = var.horizon_name, script = local.script })

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' destroy"
    environment = { VM_NODE = self.input.VM_NODE, VM_ID = self.input.VM_ID, VM_NAME = self.input.VM_NAME }
  }
}

resource "terraform_data" "vm" {
  triggers_replace = local.identity
  input            = local.identity
  depends_on       = [terraform_data.teardown]

  provisioner "local-exec" {
    command     = "bash '${local.script}' create"
    environment = merge(local.identity, local.config)
  }
}

resource "terraform_data" "config" {
  triggers_replace = merge(local.identity, local.config)
  depends_on       = [terraform_data.vm]

  provisioner "local-exec" {
    command     = "bash '${local.script}' configure"
    environment = merge(local.identity, local.config)
  }
}
