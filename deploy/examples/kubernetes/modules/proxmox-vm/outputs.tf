output "vm_id" { value = proxmox_virtual_environment_vm.vm.vm_id }
output "node" { value = proxmox_virtual_environment_vm.vm.node_name }
output "ip" { value = var.address.ip }
