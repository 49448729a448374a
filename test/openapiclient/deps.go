// Package openapiclient tests that clients generated from virt-api's OpenAPI work: gen makes
// them, the programs under program/ drive virt-api through them (test/integration runs both).
// It is a module of its own so that the generator stays out of Hangar's go.mod.
package openapiclient

// What the generated clients import, kept in go.mod although only generated code uses them.
import (
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"
	_ "go.yaml.in/yaml/v3"
)
