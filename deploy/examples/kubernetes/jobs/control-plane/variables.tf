variable "horizon_name" { type = string }
variable "horizon_node" { type = string }
variable "horizon_pool" { type = string }
variable "horizon_vmid" { type = number }
variable "horizon_tags" {
  type    = list(string)
  default = []
}
variable "horizon_startup_order" {
  type     = number
  nullable = true
  default  = null
}
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

variable "template_vmid" {
  type        = number
  description = "The VMID of the cloud-image VM template to clone (with containerd, kubeadm, kubelet and kubectl installed)."
}
variable "template_node" {
  type        = string
  description = "The node holding the template."
}
variable "cores" { type = number }
variable "memory_mb" { type = number }
variable "disk_gb" { type = number }
variable "datastore" {
  type    = string
  default = "local-lvm"
}
variable "bridge" {
  type    = string
  default = "vmbr0"
}
variable "kubernetes_version" {
  type        = string
  description = "The Kubernetes minor version kubeadm installs, e.g. 1.31."
}
variable "pod_cidr" {
  type    = string
  default = "10.244.0.0/16"
}
