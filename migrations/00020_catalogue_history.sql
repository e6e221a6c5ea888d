-- +goose Up

-- A removed ISO is history: it must not keep the Proxmox server it was built on from being
-- forgotten. Forgetting a server clears the server of its removed ISOs (and of the executions
-- of removed stacks) in the transaction that deletes it; the foreign key still refuses to
-- delete a server a live ISO or execution names.
ALTER TABLE isos ALTER COLUMN server_id DROP NOT NULL;

-- +goose Down
UPDATE isos SET server_id = (SELECT id FROM proxmox_servers LIMIT 1) WHERE server_id IS NULL;
DELETE FROM isos WHERE server_id IS NULL;
ALTER TABLE isos ALTER COLUMN server_id SET NOT NULL;
