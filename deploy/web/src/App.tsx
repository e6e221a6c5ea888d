import { QueryCache, QueryClient, QueryClientProvider, type QueryKey, useQueryClient } from "@tanstack/react-query";
import { useEffect, useSyncExternalStore } from "react";
import { ApiError, getToken, setToken } from "./api/client";
import { mergeKeys, streamKeys } from "./api/queries/events";
import { useMe } from "./api/queries/me";
import { href, useRoute } from "./router";
import { SignIn } from "./pages/SignIn";
import { StacksList } from "./pages/StacksList";
import { CreateStack } from "./pages/CreateStack";
import { StackDetail } from "./pages/StackDetail";
import { Startup } from "./pages/Startup";
import { Catalogue } from "./pages/Catalogue";
import { People } from "./pages/People";
import { Notifications } from "./pages/Notifications";
import { TemplateDetail, TemplatesList } from "./pages/Templates";
import { BuildIso, IsoDetail, IsosList } from "./pages/Isos";
import { openStream } from "./sse";
import { Online } from "./live";

const client = new QueryClient({
  defaultOptions: {
    queries: { retry: (n, e) => !(e instanceof ApiError && e.status >= 400 && e.status < 500) && n < 2, staleTime: 5_000 },
  },
  queryCache: new QueryCache(),
});

const subscribeAuth = (fn: () => void) => {
  window.addEventListener("horizon-auth", fn);
  return () => window.removeEventListener("horizon-auth", fn);
};

export function App() {
  const token = useSyncExternalStore(subscribeAuth, getToken);
  return <QueryClientProvider client={client}>{token ? <Shell /> : <SignIn />}</QueryClientProvider>;
}

/** How long the events stream's invalidations are gathered before they are made, in ms. */
const GATHER_MS = 100;

/**
 * useEvents follows GET /v1/events and invalidates what an event changes: no polling. The
 * events of a moment are gathered (GATHER_MS) and their queries invalidated once each.
 */
function useEvents() {
  const qc = useQueryClient();
  useEffect(() => {
    let stale: QueryKey[] | "all" = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const invalidate = () => {
      timer = undefined;
      if (stale === "all") void qc.invalidateQueries();
      else for (const queryKey of stale) void qc.invalidateQueries({ queryKey });
      stale = [];
    };
    const stop = openStream({
      token: { purpose: "events" },
      path: "/v1/events",
      events: ["event", "reset", "lagging"],
      onOnline: (on) => Online.set(on),
      onEvent: (type, data) => {
        stale = mergeKeys(stale, streamKeys(type, data));
        timer ??= setTimeout(invalidate, GATHER_MS);
      },
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [qc]);
}

function Shell() {
  const route = useRoute();
  const me = useMe();
  useEvents();
  const online = useSyncExternalStore(Online.subscribe, Online.get);
  const [, section, id, sub] = ["", ...route.path];
  let page: React.ReactNode;
  if (section === "startup") page = <Startup />;
  else if (section === "catalogue") page = <Catalogue tab={id ?? "servers"} id={sub} />;
  else if (section === "people") page = <People tab={id ?? "users"} />;
  else if (section === "notifications") page = <Notifications />;
  else if (section === "templates") page = id ? <TemplateDetail id={id} /> : <TemplatesList />;
  else if (section === "isos") page = !id ? <IsosList /> : id === "new" ? <BuildIso /> : <IsoDetail id={id} />;
  else if (section !== "stacks")
    page = (
      <p>
        Not found. <a href="#/stacks">Go to stacks</a>
      </p>
    );
  else if (!id) page = <StacksList />;
  else if (id === "new") page = <CreateStack />;
  else if (sub === "edit") page = <CreateStack stackId={id} />;
  else page = <StackDetail id={id} />;
  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link; the hash is the router's, so it focuses #main itself */}
      <a
        className="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById("main")?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="top">
        <a className="brand" href={href("/stacks")}>
          Horizon
        </a>
        {/* Drawn once who is signed in is known: a link that appeared then (New stack) would move
            the others under the pointer between aiming and clicking. */}
        {me.data && (
          <nav aria-label="Main">
            <a href={href("/stacks")}>Stacks</a>
            {me.data.role !== "viewer" && <a href={href("/stacks/new")}>New stack</a>}
            <a href={href("/startup")}>Startup</a>
            <a href={href("/templates")}>Templates</a>
            <a href={href("/isos")}>ISOs</a>
            <a href={href("/catalogue/servers")}>Catalogue</a>
            <a href={href("/people/users")}>People</a>
            <a href={href("/notifications")}>Notifications</a>
          </nav>
        )}
        <span className="spacer" />
        {me.data && (
          <span className="who">
            {me.data.name} <span className="badge">{me.data.role}</span>
          </span>
        )}
        <button
          type="button"
          onClick={() => {
            client.clear();
            setToken(null);
          }}
        >
          Sign out
        </button>
      </header>
      {!online && (
        <div className="banner" role="status">
          Connection to Horizon lost — live updates resume when it is back.
        </div>
      )}
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}
