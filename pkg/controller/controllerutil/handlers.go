package controllerutil

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Handler is an informer and what a change of any of its objects enqueues.
type Handler struct {
	Informer cache.SharedIndexInformer
	// OnChange gets the added object, the new one of an update, or the deleted one (perhaps a
	// tombstone: Object unwraps it).
	OnChange func(obj any)
}

// AddHandlers registers each handler for adds, updates and deletes, and returns the
// informers' HasSynced, for the controller's Run to wait on.
func AddHandlers(handlers ...Handler) ([]cache.InformerSynced, error) {
	synced := make([]cache.InformerSynced, 0, len(handlers))
	for _, h := range handlers {
		synced = append(synced, h.Informer.HasSynced)
		if _, err := h.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    h.OnChange,
			UpdateFunc: func(_, obj any) { h.OnChange(obj) },
			DeleteFunc: h.OnChange,
		}); err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return synced, nil
}
