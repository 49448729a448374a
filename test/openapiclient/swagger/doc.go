// Package swagger is where the test puts the client it generates from virt-api's /openapi/v2
// (or KubeVirt's swagger.json), through go build -overlay: the generated file is never written
// into the tree.
package swagger
