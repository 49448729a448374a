// Command gen generates a Go client with oapi-codegen from an OpenAPI document, as a user of
// virt-api (or of KubeVirt) would: a v3 document as it is, a v2 (swagger) document converted to
// v3 with kin-openapi first, since oapi-codegen reads only v3.
//
// KubeVirt's own swagger.json needs two repairs before any generator takes it, which -repair
// makes: JSON-schema type lists ("type": ["string", "null"]), which Swagger 2.0 does not allow,
// become their first type, and operations whose path has a parameter they do not declare (its
// deleteCollection operations lack {namespace}) are left out. Without -repair a document that
// needs either fails: virt-api's must need none.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

func main() {
	in := flag.String("in", "", "the OpenAPI document, v2 or v3")
	out := flag.String("out", "", "the Go file to write")
	pkg := flag.String("package", "client", "the Go package of the client")
	repair := flag.Bool("repair", false, "repair what KubeVirt's swagger.json needs repaired")
	flag.Parse()
	if err := run(*in, *out, *pkg, *repair); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out, pkg string, repair bool) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var probe struct {
		Swagger string `json:"swagger"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var excluded []string
	if probe.Swagger != "" {
		if raw, excluded, err = fromSwagger(raw, repair); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
	}
	// As oapi-codegen's command loads a document: with its references resolved.
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	cfg := codegen.Configuration{
		PackageName:   pkg,
		Generate:      codegen.GenerateOptions{Models: true, Client: true},
		OutputOptions: codegen.OutputOptions{ExcludeOperationIDs: excluded},
	}.UpdateDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	code, err := codegen.Generate(doc, cfg)
	if err != nil {
		return fmt.Errorf("generate the client of %s: %w", in, err)
	}
	return os.WriteFile(out, []byte(code), 0o644)
}

// fromSwagger converts a v2 document to v3, repaired if asked (see the package comment); it
// returns the operations to leave out.
func fromSwagger(raw []byte, repair bool) ([]byte, []string, error) {
	var generic map[string]interface{}
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, nil, err
	}
	lists := typeLists(generic, repair)
	excluded := undeclaredPathParameters(generic)
	if !repair && (lists > 0 || len(excluded) > 0) {
		return nil, nil, fmt.Errorf("%d type lists and %d operations with undeclared path parameters (%v)", lists, len(excluded), excluded)
	}
	raw, err := json.Marshal(generic)
	if err != nil {
		return nil, nil, err
	}
	var v2 openapi2.T
	if err := json.Unmarshal(raw, &v2); err != nil {
		return nil, nil, err
	}
	v3, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, nil, fmt.Errorf("convert to OpenAPI v3: %w", err)
	}
	raw, err = json.Marshal(v3)
	return raw, excluded, err
}

// typeLists counts the schemas whose type is a list, and reduces each to its first type when
// repair is set.
func typeLists(node interface{}, repair bool) int {
	n := 0
	switch v := node.(type) {
	case map[string]interface{}:
		if list, ok := v["type"].([]interface{}); ok && len(list) > 0 {
			n++
			if repair {
				v["type"] = list[0]
			}
		}
		for _, child := range v {
			n += typeLists(child, repair)
		}
	case []interface{}:
		for _, child := range v {
			n += typeLists(child, repair)
		}
	}
	return n
}

var pathParameter = regexp.MustCompile(`\{[^}]+\}`)

// undeclaredPathParameters lists the operations that declare fewer path parameters than their
// path has, which no generator can call.
func undeclaredPathParameters(doc map[string]interface{}) []string {
	shared, _ := doc["parameters"].(map[string]interface{})
	inPath := func(params []interface{}) int {
		n := 0
		for _, p := range params {
			param, _ := p.(map[string]interface{})
			if ref, ok := param["$ref"].(string); ok {
				param, _ = shared[ref[len("#/parameters/"):]].(map[string]interface{})
			}
			if param["in"] == "path" {
				n++
			}
		}
		return n
	}
	var out []string
	paths, _ := doc["paths"].(map[string]interface{})
	for path, item := range paths {
		ops, _ := item.(map[string]interface{})
		common, _ := ops["parameters"].([]interface{})
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			operation, _ := op.(map[string]interface{})
			params, _ := operation["parameters"].([]interface{})
			if inPath(common)+inPath(params) < len(pathParameter.FindAllString(path, -1)) {
				out = append(out, fmt.Sprint(operation["operationId"]))
			}
		}
	}
	sort.Strings(out)
	return out
}
