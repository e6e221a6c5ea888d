// The catalogue: an admin refreshes the sandbox's inventory, registers a second Proxmox server
// (a wrong token secret is refused on its field first; 11-isos builds on both), adds addresses
// to a network (a wrong IP refused, then a range at once) and a user to a team (a wrong e-mail
// refused), then renames her in the form below her row; a member reads it all and is offered
// no write but its own SSH keys.
import { readFileSync } from "node:fs";
import { env, expect, signInLink, test } from "./fixtures";

test("the catalogue: admins write, members read", async ({ page, lab, api, axe, signIn }) => {
  // Catalogue: the sandbox's inventory, refreshed; a registration with a wrong token shows
  // the cluster's refusal on the token's field, then the right token registers it.
  const sandbox = (await api(lab.admin, "GET", "/v1/proxmox-servers")).items[0];
  const a2 = await signIn(lab.admin, "#/catalogue");
  await a2.getByRole("link", { name: sandbox.name, exact: true }).click();
  await expect(a2.locator('tr[data-node="pve1"]')).toBeVisible();
  await a2.getByRole("button", { name: "Refresh inventory" }).click();
  await expect(a2.getByRole("button", { name: "Refresh inventory" })).toBeVisible();
  await axe(a2, "catalogue-server");
  await a2.getByRole("link", { name: "Proxmox servers" }).click();
  await a2.getByRole("button", { name: "Register a Proxmox server" }).click();
  const reg = a2.locator("form.resource-form");
  await reg.getByLabel("Name *").fill("second");
  await reg.getByLabel("API URL *").fill(sandbox.api_url);
  await reg.getByLabel("API token id *").fill(sandbox.token_id);
  await reg.getByLabel("API token secret *").fill("not-the-secret");
  await reg.getByLabel("TLS fingerprint (SHA-256)").fill(sandbox.tls_fingerprint);
  await reg.getByLabel("SSH private key *").fill(readFileSync(env("NODE_KEY_FILE"), "utf8"));
  await reg
    .getByLabel("Nodes' SSH")
    .fill(
      sandbox.nodes
        .map(
          (n: { name: string; ssh_address: string; ssh_host_key_fingerprint: string }) =>
            `${n.name} ${n.ssh_address} ${n.ssh_host_key_fingerprint}`,
        )
        .join("\n"),
    );
  await reg.getByRole("button", { name: "Check and register" }).click();
  await expect(reg.locator(".field.has-error").getByText(/refused the API token/)).toBeVisible({ timeout: 30_000 });
  await expect(reg.getByLabel("API token secret *"), "the refusal is on the secret's field").toHaveAttribute("aria-invalid", "true");
  await axe(a2, "catalogue-register-refused");
  await reg.getByLabel("API token secret *").fill(env("PVE_TOKEN_SECRET"));
  await reg.getByRole("button", { name: "Check and register" }).click();
  await expect(a2.locator('tr[data-server="second"]')).toBeVisible({ timeout: 30_000 });

  // A network's addresses: a wrong IP is refused on its field; free and attached are told.
  await a2.getByRole("link", { name: "Networks" }).click();
  await a2.locator("tr[data-network] a").first().click();
  await a2.getByRole("button", { name: "Add an address" }).click();
  const addr = a2.locator("form.resource-form");
  await addr.getByLabel("Name *").fill("spare");
  await addr.getByLabel("IP address *").fill("10.255.255.300");
  await addr.getByRole("button", { name: "Save" }).click();
  await expect(addr.locator(".field.has-error").first()).toBeVisible();
  await expect(addr.getByLabel("IP address *"), "the wrong IP is refused on its field").toHaveAttribute("aria-invalid", "true");
  await axe(a2, "catalogue-address-refused");
  await addr.getByRole("button", { name: "Cancel" }).click();
  // A range at once: five named addresses, free.
  const loop = (await api(lab.admin, "GET", "/v1/networks")).items.find((n: { name: string }) => n.name === "loop");
  const prefix = loop.cidr.replace(/\.0\/24$/, "");
  await a2.getByRole("button", { name: "Add a range of addresses" }).click();
  const rng = a2.locator("form.resource-form");
  await rng.getByLabel("Name prefix *").fill("spare-");
  await rng.getByLabel("First IP *").fill(`${prefix}.100`);
  await rng.getByLabel("Last IP *").fill(`${prefix}.104`);
  await rng.getByRole("button", { name: "Add the range" }).click();
  await expect(a2.locator('tr[data-address="spare-104"]')).toBeVisible();
  await expect(a2.locator('tr[data-address^="spare-"]'), "five addresses added at once").toHaveCount(5);
  await expect(a2.locator('tr[data-address="spare-100"] td').nth(2), "free").toHaveText("free");
  await axe(a2, "catalogue-address-range");
  await a2.getByRole("link", { name: "SSH keys" }).click();
  await a2.getByRole("link", { name: "Environments" }).click();
  await expect(a2.locator('tr[data-environment="lab"]')).toBeVisible();
  await axe(a2, "catalogue-environments");
  // People (admin): a user with a wrong e-mail is refused on its field, then added to a team.
  await a2.getByRole("link", { name: "People" }).click();
  await a2.getByRole("button", { name: "Add a user" }).click();
  const uf = a2.locator("form.resource-form");
  await uf.getByLabel("Name *").fill("Nora Ops");
  await uf.getByLabel("E-mail *").fill("not-an-email");
  await uf.getByLabel("ops", { exact: true }).check();
  await uf.getByRole("button", { name: "Save" }).click();
  await expect(uf.locator(".field.has-error").first()).toBeVisible();
  await expect(uf.getByLabel("E-mail *"), "the wrong e-mail is refused on its field").toHaveAttribute("aria-invalid", "true");
  await axe(a2, "people-user-refused");
  await uf.getByLabel("E-mail *").fill("nora@example.org");
  await uf.getByRole("button", { name: "Save" }).click();
  const nora = a2.locator('tr[data-user="nora@example.org"]');
  await expect(nora.getByText("ops", { exact: true })).toBeVisible();
  // Change opens the user's form in a row of its own below hers; saved, it closes.
  await nora.getByRole("button", { name: "Change Nora Ops" }).click();
  const cf = a2.locator('tr[data-user="nora@example.org"] + tr.expanded form.resource-form');
  await cf.getByLabel("Name *").fill("Nora Oates");
  await axe(a2, "people-user-change");
  await cf.getByRole("button", { name: "Save" }).click();
  await expect(nora.getByRole("cell", { name: "Nora Oates", exact: true })).toBeVisible();
  await expect(cf, "the form closes once saved").toHaveCount(0);
  await a2.getByRole("link", { name: "Teams" }).click();
  await expect(a2.locator('tr[data-team="ops"]').getByText(/Nora Oates \(member\)/)).toBeVisible();
  await a2.context().close();

  // A member reads the catalogue and is offered no write but its own SSH keys.
  await page.goto(await signInLink(lab, lab.member, "#/catalogue"));
  await expect(page.locator(`tr[data-server="${sandbox.name}"]`)).toBeVisible();
  await expect(
    page.getByRole("button", { name: /^(Register a Proxmox server|Refresh inventory)$/ }),
    "a member registers no server",
  ).toHaveCount(0);
  await page.getByRole("link", { name: "Environments" }).click();
  await expect(page.locator('tr[data-environment="lab"]')).toBeVisible();
  await expect(page.getByRole("button", { name: /^(Add an environment|Edit .*)$/ }), "a member edits no environment").toHaveCount(0);
  await page.getByRole("link", { name: "SSH keys" }).click();
  await expect(page.locator('tr[data-key="laptop"]').getByText(/^SHA256:/)).toBeVisible();
  await axe(page, "catalogue-ssh-keys");
});
