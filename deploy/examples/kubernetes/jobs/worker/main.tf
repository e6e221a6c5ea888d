# The worker job: a VM from ../../modules/proxmox-vm. The horizon_* variables are Horizon's
# (deploy/examples/README.md); the others are the template's parameters.

terraform {
  required_version = ">= 1.5"
  required_providers {
    proxmox = {
      source  = "bpg/proxmox"
      version = "~> 0.78"
    }
  }
}

provider "proxmox" {}

module "vm" {
  source = "../../modules/proxmox-vm"

  name          = var.horizon_name
  node          = var.horizon_node
  pool          = var.horizon_pool
  vmid          = var.horizon_vmid
  tags          = concat(var.horizon_tags, ["kubernetes", "worker"])
  startup_order = var.horizon_startup_order
  address       = var.horizon_address
  cloud_init    = var.horizon_cloud_init
  description   = "Kubernetes worker, managed by Horizon"
  template_vmid = var.template_vmid
  template_node = var.template_node
  cores         = var.cores
  memory_mb     = var.memory_mb
  disk_gb       = var.disk_gb
  datastore     = var.datastore
  bridge        = var.bridge
}

output "vm_id" { value = module.vm.vm_id }
output "node" { value = module.vm.node }
output "ip" { value = module.vm.ip }
