# The conventional outputs: Horizon records vm_id and node for the execution, and its scripts
# connect to ip.

output "vm_id" {
  value       = tonumber(terraform_data.vm.output.VM_ID)
  description = "The VM's VMID."
}

output "node" {
  value       = terraform_data.vm.output.VM_NODE
  description = "The node the VM runs on."
}

output "ip" {
  value       = var.horizon_address.ip
  description = "The VM's address, where scripts connect."
  depends_on  = [terraform_data.config]
}
