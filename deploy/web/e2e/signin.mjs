// signInLink is the link `go tool task up` prints, for any token: a one-time code minted by
// POST /v1/sign-in-codes, in the fragment, with the console route to open after signing in.
export async function signInLink(CONSOLE, API, token, next) {
  const r = await fetch(`${API}/v1/sign-in-codes`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  if (r.status !== 201) throw new Error(`POST /v1/sign-in-codes: ${r.status} ${await r.text()}`);
  const { code } = await r.json();
  return `${CONSOLE}/#code=${code}${next ? `&next=${encodeURIComponent(next)}` : ""}`;
}
