# Written by Horizon. State is kept in Postgres by the built-in pg backend; the connection
# (PG_CONN_STR) and the schema (PG_SCHEMA_NAME) come from the environment, never from this file.
terraform {
  backend "pg" {}
}
