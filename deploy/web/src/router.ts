// Hash routes, so a CDN serves index.html for every screen without a rewrite rule:
// #/stacks?state=…, #/stacks/new, #/stacks/{id}, #/stacks/{id}/edit, #/startup,
// #/templates, #/templates/{id}?v=…, #/isos, #/isos/new, #/isos/{id}, #/catalogue/{kind}[/{id}],
// #/people/{users|teams|tokens}.
import { useSyncExternalStore } from "react";

export interface Route {
  path: string[];
  query: URLSearchParams;
}

function read(): Route {
  const h = location.hash.replace(/^#/, "") || "/stacks";
  const [p, q] = h.split("?");
  return { path: p.split("/").filter(Boolean), query: new URLSearchParams(q ?? "") };
}

// The snapshot is re-read whenever the hash differs from the one it was read from, so a
// replaceState (which fires no event) is seen at the next render too.
let currentHash: string | null = null;
let current: Route;
function snapshot(): Route {
  if (location.hash !== currentHash) {
    currentHash = location.hash;
    current = read();
  }
  return current;
}
const subscribe = (fn: () => void) => {
  window.addEventListener("hashchange", fn);
  return () => window.removeEventListener("hashchange", fn);
};

export function useRoute(): Route {
  return useSyncExternalStore(subscribe, snapshot);
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ""}`;
}

export function navigate(path: string, query?: Record<string, string | undefined>, replace = false) {
  const h = href(path, query);
  if (replace) {
    history.replaceState(null, "", h);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else location.hash = h;
}
