-- +goose Up

-- Copies of an installer image (ISO kind iso) on the nodes of its cluster that cannot reach
-- the storage it was built on: made by a machine build on that node, once, verified against
-- the image's checksum, reused while that checksum is the image's.
CREATE TABLE iso_copies (
  iso_id             uuid NOT NULL REFERENCES isos (id),
  node               text NOT NULL,
  storage            text NOT NULL,
  volid              text NOT NULL,
  checksum           text NOT NULL,
  checksum_algorithm text NOT NULL,
  size               bigint NOT NULL,
  copied_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (iso_id, node)
);

-- +goose Down
DROP TABLE iso_copies;
