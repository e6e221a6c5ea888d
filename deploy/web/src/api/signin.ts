// Sign-in links. A link that signs a browser in (`go tool task up` prints one) carries a
// one-time code, `#code=hzc_…[&next=<hash route>]`, never an API token: the link lands in the
// browser's history and address-bar completion. The console exchanges the code for the token
// (POST /v1/sign-in: spent on first use, valid ten minutes), keeps the token in
// sessionStorage, and wipes the fragment from the address bar at once. An old-style
// `#token=` link is wiped too but not honoured: the sign-in screen says why.
import { ApiError, type Problem } from "./client";

export type SignInLink = { code: string; next: string } | { legacyToken: true; next: string };

/** parseSignInLink reads a sign-in fragment; null when the hash is not one. */
export function parseSignInLink(hash: string): SignInLink | null {
  const m = /^#(code|token)=([^&]*)(?:&next=(.*))?$/.exec(hash);
  if (!m) return null;
  let next = "#/stacks";
  try {
    const n = m[3] ? decodeURIComponent(m[3]) : "";
    // Only a route of the console's own: never another origin or a script URL.
    if (n.startsWith("#/")) next = n;
  } catch {
    // a malformed next leaves the default
  }
  if (m[1] === "token") return { legacyToken: true, next };
  return { code: decodeURIComponent(m[2]), next };
}

let notice: Problem | null = null;

/** takeSignInNotice returns, once, why a sign-in link did not sign in. */
export function takeSignInNotice(): ApiError | null {
  const p = notice;
  notice = null;
  return p ? new ApiError(p.status ?? 401, p) : null;
}

/**
 * followSignInLink handles a sign-in fragment in location.hash, if any: it wipes the fragment
 * from the address bar first (whatever happens next), then exchanges the code for a token at
 * apiBaseUrl and returns it, or null with a notice for the sign-in screen.
 */
export async function followSignInLink(apiBaseUrl: string): Promise<string | null> {
  const link = parseSignInLink(location.hash);
  if (!link) return null;
  history.replaceState(null, "", location.pathname + location.search + link.next);
  if ("legacyToken" in link) {
    notice = {
      type: "urn:horizon:problem:unauthenticated",
      title: "This sign-in link is no longer accepted",
      status: 401,
      detail: "Sign-in links carry a one-time code now, never a token: paste the API token below, or ask `go tool task up` for a new link.",
    };
    return null;
  }
  try {
    const res = await fetch(`${apiBaseUrl}/v1/sign-in`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code: link.code }),
      cache: "no-store",
    });
    if (res.ok) return ((await res.json()) as { token: string }).token;
    notice = (await res.json()) as Problem;
  } catch {
    notice = {
      type: "urn:horizon:problem:unavailable",
      title: "The API does not answer",
      status: 503,
      detail: "The sign-in link could not be checked; try again when the API is back.",
    };
  }
  return null;
}
