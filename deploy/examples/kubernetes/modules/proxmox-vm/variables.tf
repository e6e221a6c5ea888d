variable "name" { type = string }
variable "node" { type = string }
variable "pool" { type = string }
variable "vmid" { type = number }
variable "tags" { type = list(string) }
variable "startup_order" {
  type     = number
  nullable = true
}
variable "address" {
  type = object({
    ip      = string
    prefix  = number
    gateway = string
    dns     = list(string)
    name    = string
  })
}
variable "cloud_init" { type = string }
variable "description" { type = string }
variable "template_vmid" { type = number }
variable "template_node" { type = string }
variable "cores" { type = number }
variable "memory_mb" { type = number }
variable "disk_gb" { type = number }
variable "datastore" { type = string }
variable "bridge" { type = string }
