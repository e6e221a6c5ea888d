-- +goose Up

-- A template is a catalogue entry: a name, a description, whether it may start new stacks
-- (active), and its numbered versions. Only active templates start new stacks; stacks already
-- made from an inactive one keep working.
CREATE TABLE templates (
  id             uuid PRIMARY KEY DEFAULT uuid_v7(),
  name           text NOT NULL,
  description    text NOT NULL DEFAULT '',
  active         boolean NOT NULL DEFAULT true,
  latest_version int NOT NULL CHECK (latest_version >= 1),
  created_by     uuid,
  version        bigint NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT templates_name_key UNIQUE (name)
);

-- A template version is immutable once written (a trigger refuses updates): stacks pin it. It
-- keeps the definition as canonical JSON, its hash, the commit each job's and terraform
-- action's branch pointed to at upload, and the inspected modules (variables and outputs), so
-- that serving the form never needs git again. created_by has no foreign key, like
-- activity.actor_id: a version outlives whoever uploaded it.
CREATE TABLE template_versions (
  id              uuid PRIMARY KEY DEFAULT uuid_v7(),
  template_id     uuid NOT NULL REFERENCES templates (id) ON DELETE RESTRICT,
  number          int NOT NULL CHECK (number >= 1),
  definition      jsonb NOT NULL,
  definition_hash text NOT NULL,
  job_commits     jsonb NOT NULL,
  action_commits  jsonb NOT NULL DEFAULT '{}',
  modules         jsonb NOT NULL,
  created_by      uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT template_versions_number_key UNIQUE (template_id, number)
);

-- +goose StatementBegin
CREATE FUNCTION template_versions_immutable() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'template version % of template % is immutable', OLD.number, OLD.template_id
    USING ERRCODE = 'integrity_constraint_violation';
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER template_versions_immutable BEFORE UPDATE ON template_versions
  FOR EACH ROW EXECUTE FUNCTION template_versions_immutable();

-- Credentials for private git repositories. The credential whose url_prefix is the longest
-- match of a repository URL (at a '/' boundary) is used for it. Secrets are AES-GCM
-- ciphertexts (shared/secrets) bound to their column by the purpose string
-- "git_credentials.<column>"; the SSH host key is public and kept in clear.
CREATE TABLE git_credentials (
  id              uuid PRIMARY KEY DEFAULT uuid_v7(),
  name            text NOT NULL,
  url_prefix      text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('https', 'ssh')),
  username        text NOT NULL DEFAULT '',
  token           bytea,
  ssh_private_key bytea,
  ssh_host_key    text NOT NULL DEFAULT '',
  created_by      uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT git_credentials_name_key UNIQUE (name),
  CONSTRAINT git_credentials_url_prefix_key UNIQUE (url_prefix),
  CONSTRAINT git_credentials_secret_check CHECK (
    (kind = 'https' AND token IS NOT NULL AND ssh_private_key IS NULL AND ssh_host_key = '') OR
    (kind = 'ssh' AND token IS NULL AND ssh_private_key IS NOT NULL AND ssh_host_key <> '' AND username = ''))
);

-- +goose Down
DROP TABLE git_credentials, template_versions, templates;
DROP FUNCTION template_versions_immutable();
