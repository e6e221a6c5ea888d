package authcache_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/authcache"
	"horizon/shared/auth"
	"horizon/shared/testkit"
)

// TestRevocationReachesEveryReplica: a token used on two replicas (so both cache it) and
// revoked on one is refused by the other at once, not after the cache TTL.
func TestRevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	a := apitest.New(t, nil)
	b := a.Replica(nil)
	_, tok := a.NewUser(auth.RoleMember)
	for _, s := range []*apitest.Server{a, b} {
		if r := s.Do("GET", "/v1/me", apitest.Req{Token: tok}); r.Status != 200 {
			t.Fatalf("before revocation: %d", r.Status)
		}
	}
	me := a.Do("GET", "/v1/me", apitest.Req{Token: tok}).Map()
	if r := a.Do("DELETE", "/v1/tokens/"+me["token_id"].(string), apitest.Req{Token: tok}); r.Status != 204 {
		t.Fatalf("revoke: %d", r.Status)
	}
	if r := a.Do("GET", "/v1/me", apitest.Req{Token: tok}); r.Status != 401 {
		t.Fatalf("the revoking replica still accepts the token: %d", r.Status)
	}
	// Well under the 5 s TTL: the eviction arrived through Redis.
	testkit.Eventually(t, time.Second, "the other replica still accepts the revoked token", func() bool {
		return b.Do("GET", "/v1/me", apitest.Req{Token: tok}).Status == 401
	})
}

// TestRoleChangeReachesEveryReplica: demoting a user takes effect on a replica that cached the
// user's principal.
func TestRoleChangeReachesEveryReplica(t *testing.T) {
	t.Parallel()
	a := apitest.New(t, nil)
	b := a.Replica(nil)
	id, tok := a.NewUser(auth.RoleAdmin)
	r := b.Do("POST", "/v1/teams", apitest.Req{Token: tok, Body: map[string]any{"name": "t1"}})
	if r.Status != 201 {
		t.Fatalf("admin creates a team: %d", r.Status)
	}
	team := r.Header.Get("Location")
	if r := a.Do("PATCH", "/v1/users/"+id.String(), apitest.Req{Body: map[string]any{"role": "viewer"}}); r.Status != 200 {
		t.Fatalf("demote: %d", r.Status)
	}
	// Renaming is admin-only and answers without a Location: a create would be followed by a
	// GET that can land after the eviction and fail for the right reason at the wrong moment.
	testkit.Eventually(t, time.Second, "the other replica still treats the user as an admin", func() bool {
		return b.Do("PATCH", team, apitest.Req{Token: tok, Body: map[string]any{"name": "t2"}}).Status == 403
	})
}

func TestCacheServesUntilEvictedByAnotherReplica(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	here, there := authcache.New(rdb, ns, time.Minute), authcache.New(rdb, ns, time.Minute)
	go here.Run(ctx, log)
	go there.Run(ctx, log)
	testkit.Eventually(t, 5*time.Second, "caches did not subscribe", func() bool { return here.Live() && there.Live() })

	p := auth.Principal{UserID: uuid.New(), TokenID: uuid.New(), Role: auth.RoleMember}
	hash := auth.HashToken(auth.NewToken().Reveal())
	here.Put(hash, p)
	if got, ok := here.Get(hash); !ok || got.TokenID != p.TokenID {
		t.Fatal("a cached principal is not served")
	}
	there.Forget(ctx, log, &p.TokenID, nil)
	testkit.Eventually(t, time.Second, "an eviction published by another replica was not applied", func() bool {
		_, ok := here.Get(hash)
		return !ok
	})

	here.Put(hash, p)
	there.Forget(ctx, log, nil, &p.UserID)
	testkit.Eventually(t, time.Second, "a user eviction was not applied", func() bool {
		_, ok := here.Get(hash)
		return !ok
	})
}

func TestCacheIsBypassedUntilSubscribed(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	c := authcache.New(rdb, ns, time.Minute) // Run never called: never subscribed
	hash := auth.HashToken(auth.NewToken().Reveal())
	c.Put(hash, auth.Principal{Role: auth.RoleAdmin})
	if _, ok := c.Get(hash); ok {
		t.Fatal("an unsubscribed cache served an entry: it could miss evictions")
	}
}
