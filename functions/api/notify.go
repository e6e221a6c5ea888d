package api

import (
	"context"

	"horizon/shared/events"
)

// Notify publishes events after the change they announce committed. A lost event costs
// followers a refresh, not correctness (they reload on reset), so failures are only logged.
func (d Deps) Notify(ctx context.Context, evs ...events.Event) {
	for _, e := range evs {
		if _, err := d.Events.Publish(ctx, e); err != nil {
			d.Log.WarnContext(ctx, "publish event", "type", e.Type, "id", e.ID, "error", err)
		}
	}
}
