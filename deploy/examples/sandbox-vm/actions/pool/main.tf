# The create-pool action: one Proxmox VE resource pool, made through the PVE API with bash and
# curl (pve-pool.sh), like the jobs' VMs — no provider is downloaded. Each run of the action is
# an instance of this module in a workspace of its own; undoing the instance destroys it, which
# deletes the pool.
#
#   - terraform_data.teardown deletes the pool (destroy-time provisioner). It is a resource of
#     its own with no create-time provisioner, because Terraform never runs the destroy-time
#     provisioners of a tainted resource (one whose creation failed or was interrupted).
#   - terraform_data.pool creates the pool ("pve-pool.sh create"), adopting a pool already there
#     with this id and comment (an interrupted apply tried again), and refusing any other.

terraform {
  required_version = ">= 1.5"
}

variable "pool" {
  type        = string
  description = "The pool's id."
}

variable "comment" {
  type        = string
  default     = ""
  description = "What the pool is for."
}

variable "db_host" {
  type        = string
  description = "The stack's database address (an input from the db job's ip output), written in the comment."
}

variable "horizon_name" {
  type        = string
  description = "The instance's name: <stack>-create-pool-<number>, written in the comment."
}

locals {
  script = "${path.module}/pve-pool.sh"
  pool = {
    POOL_ID      = var.pool
    POOL_COMMENT = trimspace("${var.comment} (${var.horizon_name}, database ${var.db_host})")
  }
}

resource "terraform_data" "teardown" {
  triggers_replace = local.pool
  input            = merge(local.pool, { script = local.script })

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' destroy"
    environment = { POOL_ID = self.input.POOL_ID, POOL_COMMENT = self.input.POOL_COMMENT }
  }
}

resource "terraform_data" "pool" {
  triggers_replace = local.pool
  input            = local.pool
  depends_on       = [terraform_data.teardown]

  provisioner "local-exec" {
    command     = "bash '${local.script}' create"
    environment = local.pool
  }
}

output "pool" {
  value       = terraform_data.pool.output.POOL_ID
  description = "The pool's id."
}

output "comment" {
  value       = terraform_data.pool.output.POOL_COMMENT
  description = "The pool's comment."
}
