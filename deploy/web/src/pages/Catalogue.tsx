// The catalogue: what stacks are built with. Everyone reads it; admins write it (the buttons
// are not offered to others, and the API refuses them anyway). One page per kind, reached from
// the catalogue's own tabs: Proxmox servers (registered after the API's connection checks,
// whose messages land on their fields; inventory refreshed on demand), environments, networks
// and their named addresses (free, or attached to which stack; one or a range at once), SSH keys (yours; admins everyone's), Nagios servers (registered
// and changed after the API's checks of both their CGIs and SSH side) and git credentials.
import { useMe } from "../api/queries/me";
import { href } from "../router";
import { ServerDetail, Servers } from "./catalogue/Servers";
import { Environments } from "./catalogue/Environments";
import { NetworkDetail, Networks } from "./catalogue/Networks";
import { SSHKeys } from "./catalogue/SSHKeys";
import { Nagios } from "./catalogue/Nagios";
import { GitCredentials } from "./catalogue/GitCredentials";

const TABS = [
  ["servers", "Proxmox servers"],
  ["environments", "Environments"],
  ["networks", "Networks"],
  ["ssh-keys", "SSH keys"],
  ["nagios", "Nagios servers"],
  ["git-credentials", "Git credentials"],
] as const;

/** catalogueTab is the page a route's tab shows: servers when none is named, "" for an unknown one (said, not replaced by another). */
export function catalogueTab(tab: string | undefined): string {
  if (!tab) return "servers";
  return TABS.some(([t]) => t === tab) ? tab : "";
}

export function Catalogue({ tab, id }: { tab: string; id?: string }) {
  const me = useMe();
  const admin = me.data?.role === "admin";
  const current = catalogueTab(tab);
  return (
    <>
      <div className="page-head">
        <h1>Catalogue</h1>
      </div>
      <nav className="tabs" aria-label="Catalogue">
        {TABS.map(([t, label]) => (
          <a key={t} href={href(`/catalogue/${t}`)} aria-current={t === current ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {current === "" && (
        <p className="problem" role="alert">
          The catalogue has no page “{tab}”: choose one above.
        </p>
      )}
      {current === "servers" && (id ? <ServerDetail id={id} admin={admin} /> : <Servers admin={admin} />)}
      {current === "environments" && <Environments admin={admin} />}
      {current === "networks" && (id ? <NetworkDetail id={id} admin={admin} /> : <Networks admin={admin} />)}
      {current === "ssh-keys" && <SSHKeys />}
      {current === "nagios" && <Nagios admin={admin} />}
      {current === "git-credentials" && <GitCredentials admin={admin} />}
    </>
  );
}
