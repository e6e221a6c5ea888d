// Online is whether the live streams are connected (a banner shows while they are not).
let online = true;
const subs = new Set<() => void>();

export const Online = {
  get: () => online,
  set(v: boolean) {
    if (v === online) return;
    online = v;
    for (const f of subs) f();
  },
  subscribe(f: () => void) {
    subs.add(f);
    return () => subs.delete(f);
  },
};
