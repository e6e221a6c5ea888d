package proxmox

import (
	"net/url"
	"strings"
)

// ContentPath is the API path of a storage volume, /nodes/{node}/storage/{storage}/content/{volid},
// for GET (its attributes) and DELETE. Each segment is escaped; the volid keeps its '/'
// ("local:snippets/x.yaml"), as PVE routes it.
func ContentPath(node, storage, volid string) string {
	parts := strings.Split(volid, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/nodes/" + url.PathEscape(node) + "/storage/" + url.PathEscape(storage) + "/content/" + strings.Join(parts, "/")
}
