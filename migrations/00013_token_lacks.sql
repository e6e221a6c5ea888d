-- +goose Up

-- What the API token may not do, per node, storage and pool, as the last discovery found it
-- (GET /access/permissions): the privileges Horizon uses there that the token does not hold.
ALTER TABLE proxmox_nodes ADD COLUMN token_lacks text[] NOT NULL DEFAULT '{}';
ALTER TABLE proxmox_storages ADD COLUMN token_lacks text[] NOT NULL DEFAULT '{}';
ALTER TABLE proxmox_pools ADD COLUMN token_lacks text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE proxmox_nodes DROP COLUMN token_lacks;
ALTER TABLE proxmox_storages DROP COLUMN token_lacks;
ALTER TABLE proxmox_pools DROP COLUMN token_lacks;
