# The app VM: the same VM as jobs/vm (used as a child module), plus what the app needs — the
# database's address (an input: ${jobs.db.outputs.ip}) and a generated admin password (a secret
# parameter), which it hands on as a sensitive output, so the stack shows it as a secret.

terraform {
  required_version = ">= 1.5"
}

variable "horizon_name" { type = string }
variable "horizon_node" { type = string }
variable "horizon_pool" { type = string }
variable "horizon_vmid" { type = number }
variable "horizon_address" {
  type = object({
    ip      = string
    prefix  = number
    gateway = string
    dns     = list(string)
    name    = string
  })
}
variable "horizon_cloud_init" { type = string }
variable "horizon_tags" {
  type    = list(string)
  default = []
}
variable "horizon_startup_order" {
  type     = number
  nullable = true
  default  = null
}

variable "cores" {
  type    = number
  default = 1
}
variable "memory_mb" {
  type    = number
  default = 512
}
variable "db_host" {
  type        = string
  description = "The database's address."
}
variable "admin_password" {
  type        = string
  sensitive   = true
  description = "The app's admin password."
}

module "vm" {
  source = "../vm"

  horizon_name          = var.horizon_name
  horizon_node          = var.horizon_node
  horizon_pool          = var.horizon_pool
  horizon_vmid          = var.horizon_vmid
  horizon_address       = var.horizon_address
  horizon_cloud_init    = var.horizon_cloud_init
  horizon_tags          = var.horizon_tags
  horizon_startup_order = var.horizon_startup_order
  cores                 = var.cores
  memory_mb             = var.memory_mb
}

output "vm_id" { value = module.vm.vm_id }
output "node" { value = module.vm.node }
output "ip" { value = module.vm.ip }

output "db_host" {
  value       = var.db_host
  description = "The database the app uses."
}

output "admin_password" {
  value       = var.admin_password
  sensitive   = true
  description = "The app's admin password."
}
