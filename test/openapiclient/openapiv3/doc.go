// Package openapiv3 is where the test puts the client it generates from virt-api's
// /openapi/v3/apis/kubevirt.io/v1, through go build -overlay: the generated file is never
// written into the tree.
package openapiv3
