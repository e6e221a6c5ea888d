// The console's entry: read config.json (beside index.html) for the API's base URL, follow a
// sign-in link (`#code=…`, as the dev runner prints one: a one-time code exchanged for a token,
// see api/signin.ts), then render the app.
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { configure, setToken } from "./api/client";
import { followSignInLink } from "./api/signin";
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
  const token = await followSignInLink(apiBaseUrl.replace(/\/$/, ""));
  if (token) setToken(token);
  root.render(<App />);
}

void start();
