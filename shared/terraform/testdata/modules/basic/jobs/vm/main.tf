# A provider-free job module for the real-binary tests: one terraform_data "VM" whose
# local-exec sleeps for var.sleep_seconds, so a test can cancel an apply in the middle.
variable "horizon_name" {
  type = string
}

variable "admin_password" {
  type      = string
  sensitive = true
}

variable "sleep_seconds" {
  type    = number
  default = 0
}

module "tag" {
  source = "../../modules/tag" # a relative module source: the whole checkout is copied
  name   = var.horizon_name
}

resource "terraform_data" "vm" {
  input = module.tag.value

  provisioner "local-exec" {
    command = "echo creating ${self.input} && sleep ${var.sleep_seconds}"
  }
}

output "name" {
  value = terraform_data.vm.output
}

output "admin_password" {
  value     = var.admin_password
  sensitive = true
}
