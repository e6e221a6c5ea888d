// Package tags holds the stack:tags task: it writes a stack's labels to every VM of the stack
// as Proxmox tags, through the Proxmox API and without a Terraform run (the modules also get
// them as horizon_tags on their next apply). It reads the labels when it runs, so it is
// idempotent and converges on the latest labels whatever the order of deliveries.
package tags

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/auth"
	"horizon/shared/drift"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// Handler runs stack:tags.
type Handler struct {
	DB  *pgxpool.Pool
	Box *secrets.Box
	Log *slog.Logger
}

// ProcessTask implements asynq.Handler.
func (h Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.StackTags
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	s, err := store.StackGet(ctx, h.DB, auth.Scope{All: true}, p.StackID)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	execs, err := store.ExecutionsOfStack(ctx, h.DB, s.ID, false)
	if err != nil {
		return err
	}
	tags := strings.Join(horizon.VMTags(s), ";")
	clients := map[string]*proxmox.Client{}
	var failed []error
	for _, e := range execs {
		if e.VMID == nil || e.ServerID == nil || e.Node == nil || e.State != horizon.ExecutionActive {
			continue
		}
		c, ok := clients[e.ServerID.String()]
		if !ok {
			if c, err = h.client(ctx, *e.ServerID); err != nil {
				return err
			}
			clients[e.ServerID.String()] = c
		}
		path := fmt.Sprintf("/nodes/%s/qemu/%d/config", url.PathEscape(*e.Node), *e.VMID)
		if err := c.Put(ctx, path, map[string]any{"tags": tags}, nil); err != nil {
			if !errors.Is(err, proxmox.ErrNotFound) {
				failed = append(failed, err)
			}
			continue
		}
		// What drift checks expect from now on (a VM gone is theirs to report).
		if err := store.VMRecordSetTags(ctx, h.DB, e.ID, drift.NormalizeTags(tags)); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("write tags of stack %s: %w", s.ID, errors.Join(failed...)) // retried
	}
	return nil
}

func (h Handler) client(ctx context.Context, id uuid.UUID) (*proxmox.Client, error) {
	srv, err := store.ProxmoxServerGet(ctx, h.DB, id)
	if err != nil {
		return nil, err
	}
	return proxmox.ForServer(h.Box, srv, 30*time.Second)
}
