-- +goose Up

-- The outbox's pruning (workers/notify.Prune) deletes an old event once no delivery refers to
-- it; this index answers "does a delivery refer to it" (and the cascade of an event's deletion)
-- without scanning every delivery.
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- +goose Down
DROP INDEX webhook_deliveries_event_idx;
