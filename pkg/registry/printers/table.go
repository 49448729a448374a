// Package printers builds the server-side tables behind `kubectl get`, so the columns a user
// sees for Hangar's kinds are the ones KubeVirt shows.
package printers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// RowFunc returns the cells of one object's row, in column order.
type RowFunc func(obj runtime.Object) ([]interface{}, error)

// TableConvertor renders objects and lists of one kind as tables.
type TableConvertor struct {
	Columns []metav1.TableColumnDefinition
	Row     RowFunc
}

// ConvertToTable implements rest.TableConvertor.
func (c TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: c.Columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}

	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		cells, err := c.Row(item)
		if err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: item}})
	}
	return table, nil
}

// NameColumn is the NAME column every table starts with.
var NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}

// AgeColumn is the AGE column.
var AgeColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}

// Age renders a creation timestamp as kubectl does (5m, 3d).
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
