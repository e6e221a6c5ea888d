package queue

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// NamespaceTakenError: the Redis namespace belongs to another installation (another database).
type NamespaceTakenError struct {
	Namespace         string
	Owner, Installing uuid.UUID
}

func (e *NamespaceTakenError) Error() string {
	return fmt.Sprintf("the Redis namespace %q is already used by another Horizon installation (installation %s; this database is "+
		"installation %s): two installations sharing a namespace would take each other's tasks. Give this one its own "+
		"HORIZON_NAMESPACE, or its own Redis database in HORIZON_REDIS_URL; if the other installation is gone for good "+
		"(its database was dropped), delete the Redis key %q", e.Namespace, e.Owner, e.Installing, e.Namespace+claimSuffix)
}

const claimSuffix = ":installation"

// ClaimNamespace makes the namespace's Redis keys and queues this installation's, or fails with
// a *NamespaceTakenError when another installation claimed them first. Every API and worker
// process calls it at start-up with the id its database holds (store.InstallationID): replicas
// of one installation share the claim. The claim has no expiry; a Redis that loses its data
// loses the claim too, and the next process to start claims the namespace again.
func ClaimNamespace(ctx context.Context, rdb redis.UniversalClient, namespace string, installation uuid.UUID) error {
	key := namespace + claimSuffix
	claimed, err := rdb.SetNX(ctx, key, installation.String(), 0).Result()
	if err != nil {
		return fmt.Errorf("claim the Redis namespace %q: %w", namespace, err)
	}
	if claimed {
		return nil
	}
	owner, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("claim the Redis namespace %q: %w", namespace, err)
	}
	if id, err := uuid.Parse(owner); err != nil || id != installation {
		return &NamespaceTakenError{Namespace: namespace, Owner: id, Installing: installation}
	}
	return nil
}
