-- +goose Up

-- A Nagios server is written over SSH (host key pinned, private key sealed) in one directory
-- Horizon owns, verified and reloaded with the commands given (Debian's by default). What the
-- CGIs list is kept (discovery) so that forms offer host groups without asking Nagios each time.
-- Servers registered before have no SSH access: publishing to them fails until they are updated.
ALTER TABLE nagios_servers
  ADD COLUMN ssh_address     text NOT NULL DEFAULT '',
  ADD COLUMN ssh_user        text NOT NULL DEFAULT 'root',
  ADD COLUMN ssh_private_key bytea, -- AES-GCM ciphertext (shared/secrets)
  ADD COLUMN ssh_host_key    text NOT NULL DEFAULT '',
  ADD COLUMN config_dir      text NOT NULL DEFAULT '/etc/nagios4/conf.d/horizon',
  ADD COLUMN verify_command  text NOT NULL DEFAULT '/usr/sbin/nagios4 -v /etc/nagios4/nagios.cfg',
  ADD COLUMN reload_command  text NOT NULL DEFAULT 'systemctl reload nagios4',
  ADD COLUMN hostgroups      text[] NOT NULL DEFAULT '{}',
  ADD COLUMN commands        text[] NOT NULL DEFAULT '{}',
  ADD COLUMN discovered_at   timestamptz,
  ADD COLUMN discovery_error text;

-- What is published where: one object file per stack on one server, listing these hosts. The
-- unpublish step and force-remove read it (the environment's server may have changed since).
CREATE TABLE nagios_publications (
  stack_id         uuid PRIMARY KEY REFERENCES stacks (id) ON DELETE CASCADE,
  nagios_server_id uuid NOT NULL REFERENCES nagios_servers (id),
  hosts            text[] NOT NULL,
  published_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX nagios_publications_server_idx ON nagios_publications (nagios_server_id);

-- +goose Down
DROP TABLE nagios_publications;
ALTER TABLE nagios_servers
  DROP COLUMN ssh_address, DROP COLUMN ssh_user, DROP COLUMN ssh_private_key, DROP COLUMN ssh_host_key,
  DROP COLUMN config_dir, DROP COLUMN verify_command, DROP COLUMN reload_command,
  DROP COLUMN hostgroups, DROP COLUMN commands, DROP COLUMN discovered_at, DROP COLUMN discovery_error;
