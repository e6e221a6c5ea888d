// Hash routes, so a CDN serves index.html for every screen without a rewrite rule:
// #/stacks?state=…, #/stacks/new, #/stacks/{id}, #/stacks/{id}/edit.
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

let current = read();
const subscribe = (fn: () => void) => {
  const on = () => {
    current = read();
    fn();
  };
  window.addEventListener("hashchange", on);
  return () => window.removeEventListener("hashchange", on);
};

export function useRoute(): Route {
  return useSyncExternalStore(subscribe, () => current);
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? "?" + s : ""}`;
}

export function navigate(path: string, query?: Record<string, string | undefined>, replace = false) {
  const h = href(path, query);
  if (replace) {
    history.replaceState(null, "", h);
    current = read();
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else location.hash = h;
}
