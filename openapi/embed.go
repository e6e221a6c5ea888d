// Package openapi embeds openapi.yaml, the contract of Horizon's HTTP API: the API serves it at
// /openapi.yaml and the tests validate every response they receive against it.
package openapi

import _ "embed"

// Spec is the OpenAPI 3.1 document.
//
//go:embed openapi.yaml
var Spec []byte
