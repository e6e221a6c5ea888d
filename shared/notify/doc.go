// Package notify owns what Horizon tells the outside world when something happens: the event
// types a webhook subscription may ask for, the thin payloads, the Standard Webhooks signature,
// the Slack and Mattermost messages, the retry schedule and the rules a destination must pass.
// The store keeps the subscriptions, the outbox and the delivery log (shared/store, webhooks.go);
// the API manages subscriptions (functions/webhooks); the workers deliver (workers/notify).
//
// Decisions:
//   - Outbox. An event is written by the store function that makes the change it reports (run
//     finished, stack state changed, ISO built or failed), in the caller's transaction, together
//     with one pending delivery per enabled subscription that wants it. Nothing is sent from a
//     request: workers pick due deliveries up (a periodic dispatch and the reconciler), so a
//     committed event is never lost and a rolled-back one never leaves.
//   - Thin payloads. A payload is built in SQL from an explicit list of columns: ids, names, the
//     team, states, the run's kind and result, the first error line, who and when, and links.
//     Outputs, parameters, secrets and log lines are never read, so they cannot leak.
//   - Standard Webhooks (https://www.standardwebhooks.com) for kind standard, signed with the
//     reference Go library: webhook-id (the delivery's id, the same on every attempt, so that
//     receivers can deduplicate), webhook-timestamp (of the attempt), webhook-signature
//     "v1,<base64 HMAC-SHA256 of id.timestamp.body>". The secret (whsec_ + 32 random bytes) is
//     shown once, sealed at rest; after a rotation the previous secret signs too (a second
//     signature in the header) until its grace period ends.
//   - Retries follow the specification's example schedule (immediately, 5 s, 5 min, 30 min, 2 h,
//     5 h, 10 h, 14 h, 20 h, 24 h) with ±10 % jitter; a Retry-After answer (429, 503) is honoured
//     when it asks for longer; 410 Gone disables the subscription and stops; after the last
//     attempt the delivery is failed. Every attempt has a timeout.
//   - Destinations: http(s) only, no credentials in the URL, at most MaxURLLength bytes.
//     Loopback, link-local, private, unique-local, CGNAT, multicast, unspecified and cloud
//     metadata addresses are refused unless an operator's CIDR allows them. The check runs when a
//     subscription is saved (after resolving the name) and again at each delivery, on the address
//     actually dialled (after DNS), so that a name that later resolves elsewhere is still
//     refused. Redirects are never followed: a 3xx is a failed attempt.
//   - Slack and Mattermost receive one short message per event with a link to the console;
//     their URL is the secret, so it is sealed too and the API only ever shows its host. Slack
//     is sent at most one message per second per destination.
package notify
