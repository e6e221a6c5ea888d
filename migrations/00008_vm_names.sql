-- +goose Up

-- A machine's name (its Proxmox VM name and hostname) is reserved when its VM id is, and kept
-- for the machine's life: unique per cluster by this index, not by a check before the write,
-- so two teams deploying same-named stacks at the same instant cannot both get one name.
-- Rows from before have none; the name is taken at their next apply.
ALTER TABLE executions ADD COLUMN vm_name text;
CREATE UNIQUE INDEX executions_vm_name_key ON executions (server_id, vm_name) WHERE state <> 'removed';

-- +goose Down
DROP INDEX executions_vm_name_key;
ALTER TABLE executions DROP COLUMN vm_name;
