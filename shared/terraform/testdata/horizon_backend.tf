# Written by Horizon. State is kept sealed by Horizon's workers, which serve it to the
# built-in http backend; the address and credentials come from the environment (TF_HTTP_*).
terraform {
  backend "http" {}
}
