-- +goose Up

-- The installation's identity, one row. Each process claims its Redis namespace with it at
-- start-up (queue.ClaimNamespace), so that two installations — two databases — pointed at one
-- Redis database and namespace refuse to start instead of taking each other's tasks. The row is
-- made by the first process that asks (store.InstallationID), not here, so that databases
-- created from a migrated template each get their own.
CREATE TABLE installation (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  singleton  bool NOT NULL DEFAULT true UNIQUE CHECK (singleton),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE installation;
