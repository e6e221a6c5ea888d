# The horizon_* variables are the job contract (deploy/examples/README.md): Horizon writes a
# value for each one the module declares.

variable "horizon_name" {
  type        = string
  description = "The VM's name, unique per stack execution (e.g. s42-db-0)."
}

variable "horizon_node" {
  type        = string
  description = "The Proxmox node to build the VM on."
}

variable "horizon_pool" {
  type        = string
  description = "The Proxmox resource pool of the VM; empty for none."
}

variable "horizon_vmid" {
  type        = number
  description = "The VMID Horizon allocated for this execution; stable across runs."
}

variable "horizon_address" {
  type = object({
    ip      = string
    prefix  = number
    gateway = string
    dns     = list(string)
    name    = string
  })
  description = "The execution's named address: IPv4, prefix length, gateway, DNS servers and its name."
}

variable "horizon_cloud_init" {
  type        = string
  description = "Volume id of the cloud-init user-data snippet Horizon uploaded (e.g. local:snippets/s42-db-0.yaml)."
}

variable "horizon_tags" {
  type        = list(string)
  default     = []
  description = "Proxmox tags: the stack's labels."
}

variable "horizon_startup_order" {
  type        = number
  nullable    = true
  default     = null
  description = "Boot order on the node; null boots last."
}

variable "cores" {
  type        = number
  default     = 1
  description = "CPU cores."
}

variable "memory_mb" {
  type        = number
  default     = 1024
  description = "Memory in MiB."
}

variable "bridge" {
  type        = string
  default     = "vmbr0"
  description = "The Linux bridge of the VM's network card."
}
