# Declares variables of every shape the tfvars golden test writes; needs no backend or run.
variable "horizon_name" { type = string }
variable "horizon_address" {
  type = object({ ip = string, prefix = number, gateway = string, dns = list(string), name = string })
}
variable "horizon_tags" {
  type    = list(string)
  default = []
}
variable "horizon_vmid" { type = number }
variable "cores" {
  type    = number
  default = 2
}
variable "admin_password" {
  type      = string
  sensitive = true
}
variable "settings" { type = any }
variable "optional_note" {
  type    = string
  default = "none"
}
