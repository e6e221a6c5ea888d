variable "name" {
  type = string
}

output "value" {
  value = "vm-${var.name}"
}
