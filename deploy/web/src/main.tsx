// The console's entry: read config.json (beside index.html) for the API's base URL, take a
// token handed over once in the URL fragment (`#token=…`, as the dev runner's sign-in link does;
// it is moved to sessionStorage and wiped from the address bar at once), then render the app.
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { configure, setToken } from "./api/client";
import "./style.css";

async function start() {
  const root = createRoot(document.getElementById("root")!);
  let apiBaseUrl = "";
  try {
    const res = await fetch("./config.json", { cache: "no-store" });
    apiBaseUrl = ((await res.json()) as { apiBaseUrl?: string }).apiBaseUrl ?? "";
  } catch {
    root.render(<p role="alert">config.json is missing or not JSON: the console does not know where the API is.</p>);
    return;
  }
  configure(apiBaseUrl);
  const m = /^#token=([^&]+)(?:&next=(.*))?$/.exec(location.hash);
  if (m) {
    setToken(decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search + (m[2] ? decodeURIComponent(m[2]) : "#/stacks"));
  }
  root.render(<App />);
}

void start();
