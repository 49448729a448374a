package integration

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
