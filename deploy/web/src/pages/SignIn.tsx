// Sign-in: paste an API token (kept in sessionStorage). A setup token (hzs_…, logged by an API
// that has no admin yet) leads to the first-admin path instead: name and email make the admin,
// whose API token is shown once and signs in.
import { useState } from "react";
import { api, ApiError, call, configure, apiBase, setToken } from "../api/client";
import { takeSignInNotice } from "../api/signin";
import { ProblemBox } from "./common";

export function SignIn() {
  const [token, setTok] = useState("");
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [err, setErr] = useState<unknown>(takeSignInNotice);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<string | null>(null);
  const setup = token.trim().startsWith("hzs_");

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      if (setup) {
        const r = await call(api.POST("/v1/setup", { body: { setup_token: token.trim(), name, email } }));
        setCreated(r.token);
        return;
      }
      // Check the token before keeping it.
      const res = await fetch(`${apiBase()}/v1/me`, { headers: { Authorization: `Bearer ${token.trim()}` } });
      if (res.status === 401)
        throw new ApiError(401, {
          type: "urn:horizon:problem:unauthenticated",
          title: "This token is not valid",
          status: 401,
          detail: "Paste an API token (hzn_…) from your administrator or `go tool task up`.",
        });
      if (!res.ok) throw new ApiError(res.status, await res.json());
      configure(apiBase());
      setToken(token.trim());
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };

  if (created)
    return (
      <main className="signin" id="main">
        <h1>You are Horizon's first admin</h1>
        <p>This is your API token. It is shown only this once: keep it in your password manager.</p>
        <pre className="token">{created}</pre>
        <button type="button" onClick={() => setToken(created)}>
          Continue to the console
        </button>
      </main>
    );
  return (
    <main className="signin" id="main">
      <h1>Sign in to Horizon</h1>
      <form onSubmit={submit}>
        <label htmlFor="token">API token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          value={token}
          onChange={(e) => setTok(e.target.value)}
          placeholder="hzn_…"
          required
        />
        <p className="hint">
          Paste an API token. It stays in this browser tab only. On a new installation, paste the setup token (hzs_…) the API logged to
          create the first admin.
        </p>
        {setup && (
          <>
            <label htmlFor="name">Your name</label>
            <input id="name" value={name} onChange={(e) => setName(e.target.value)} required />
            <label htmlFor="email">Your email</label>
            <input id="email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
          </>
        )}
        <ProblemBox error={err} />
        <button type="submit" disabled={busy}>
          {setup ? "Create the first admin" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
