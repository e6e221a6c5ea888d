package store

import (
	"context"
)

// DeployKey returns Horizon's deploy key pair (the private key sealed), creating it from
// generate the first time. Concurrent first calls agree on one key.
func DeployKey(ctx context.Context, q Querier, generate func() (sealedPrivate []byte, public string, err error)) ([]byte, string, error) {
	var priv []byte
	var pub string
	err := q.QueryRow(ctx, `SELECT private_key, public_key FROM deploy_keys WHERE id = 1`).Scan(&priv, &pub)
	if err == nil {
		return priv, pub, nil
	}
	sealed, public, gerr := generate()
	if gerr != nil {
		return nil, "", gerr
	}
	if _, err := q.Exec(ctx, `INSERT INTO deploy_keys (id, private_key, public_key) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING`, sealed, public); err != nil {
		return nil, "", translate(err)
	}
	err = q.QueryRow(ctx, `SELECT private_key, public_key FROM deploy_keys WHERE id = 1`).Scan(&priv, &pub)
	return priv, pub, translate(err)
}
