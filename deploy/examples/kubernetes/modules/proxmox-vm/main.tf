# One VM cloned from a cloud-image template, through the bpg/proxmox provider: what both jobs
# of the Kubernetes template build. The provider reads PROXMOX_VE_ENDPOINT and
# PROXMOX_VE_API_TOKEN from the environment Horizon gives Terraform; it verifies TLS against the
# worker's trust store (SSL_CERT_FILE), so install the cluster's CA there.
#
# Unlike the sandbox example, the provider does not adopt a VM it did not record: an apply
# interrupted after PVE created the VM fails the next time on "VM <id> already exists", and the
# operator imports it (terraform import … <node>/<vmid>) or deletes it. Horizon's VMID stays the
# same across runs, so that is the only way a second VM could appear, and it cannot.

terraform {
  required_version = ">= 1.5"
  required_providers {
    proxmox = {
      source  = "bpg/proxmox"
      version = "~> 0.78"
    }
  }
}

resource "proxmox_virtual_environment_vm" "vm" {
  name        = var.name
  node_name   = var.node
  vm_id       = var.vmid
  pool_id     = var.pool == "" ? null : var.pool
  tags        = sort(distinct([for t in var.tags : lower(t)]))
  description = var.description

  on_boot         = true
  started         = true
  stop_on_destroy = true

  dynamic "startup" {
    for_each = var.startup_order == null ? [] : [var.startup_order]
    content {
      order = startup.value
    }
  }

  clone {
    vm_id     = var.template_vmid
    node_name = var.template_node
    full      = true
  }

  agent {
    enabled = true
  }

  cpu {
    cores = var.cores
    type  = "x86-64-v2-AES"
  }

  memory {
    dedicated = var.memory_mb
  }

  disk {
    datastore_id = var.datastore
    interface    = "scsi0"
    size         = var.disk_gb
    discard      = "on"
    iothread     = true
  }

  network_device {
    bridge = var.bridge
  }

  operating_system {
    type = "l26"
  }

  initialization {
    datastore_id = var.datastore
    ip_config {
      ipv4 {
        address = "${var.address.ip}/${var.address.prefix}"
        gateway = var.address.gateway
      }
    }
    dns {
      servers = var.address.dns
    }
    # The user-data Horizon rendered (hostname, SSH keys, Horizon's deploy key) and uploaded.
    user_data_file_id = var.cloud_init
  }
}
