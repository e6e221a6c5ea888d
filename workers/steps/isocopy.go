package steps

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// isoOnNode makes the machine's installer image reachable from its node. When the node cannot
// reach the storage the ISO was built on (another node's, not shared), the image is copied to a
// directory storage of the node (horizon.CopyTarget): streamed from the ISO's node over SFTP
// into a temporary file, verified against the image's checksum, renamed, and recorded. Later
// builds on the node reuse the copy while it holds the image's checksum and size. It runs
// under the node's build gate, so two builds on one node never copy at once.
func (h *Handler) isoOnNode(ctx context.Context, w *stepWork, out *attempt.Log) error {
	a, ok := isoArtifact(w)
	if !ok || w.iso.Kind != horizon.ISOKindISO || w.iso.Outputs.Image == nil || w.node.Name == a.Node {
		return nil
	}
	img := w.iso.Outputs.Image
	if slices.ContainsFunc(w.server.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == a.Storage && s.Shared }) {
		return nil
	}
	target, ok := horizon.CopyTarget(w.server.Storages, w.node.Name, a.Storage)
	if !ok {
		return fmt.Errorf("node %s has no directory storage for iso content to copy ISO %s to", w.node.Name, w.iso.Name)
	}
	_, file, _ := strings.Cut(img.VolID, ":iso/")
	volid := target.Name + ":iso/" + file

	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		return err
	}
	prev, err := store.ISOCopyGet(ctx, h.DB, w.iso.ID, w.node.Name)
	switch {
	case errors.Is(err, horizon.ErrNotFound):
	case err != nil:
		return err
	case prev.VolID == volid && prev.Checksum == img.Checksum && prev.ChecksumAlgorithm == img.ChecksumAlgorithm:
		var item struct {
			Size int64 `json:"size"`
		}
		err := client.Get(ctx, proxmox.ContentPath(w.node.Name, target.Name, volid), &item)
		if err == nil && item.Size == img.Size {
			out.Say("ISO %s: using its copy %s on node %s (%s %s, copied %s)", w.iso.Name, volid, w.node.Name,
				img.ChecksumAlgorithm, img.Checksum, prev.CopiedAt.UTC().Format("2006-01-02 15:04"))
			w.isoCopy = volid
			return nil
		}
		out.Say("ISO %s: its copy %s on node %s is gone or changed: copying it again", w.iso.Name, volid, w.node.Name)
	}

	source := slices.IndexFunc(w.server.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == a.Storage })
	if source < 0 || w.server.Storages[source].Path == "" {
		return fmt.Errorf("ISO %s: no path for storage %s in Horizon's inventory of %s", w.iso.Name, a.Storage, w.server.Name)
	}
	out.Say("ISO %s: node %s cannot reach storage %s of node %s; copying %s to storage %s (%d bytes)", w.iso.Name,
		w.node.Name, a.Storage, a.Node, file, target.Name, img.Size)
	from, err := proxmox.DialNode(ctx, h.Box, *w.server, a.Node)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := proxmox.DialNode(ctx, h.Box, *w.server, w.node.Name)
	if err != nil {
		return err
	}
	defer to.Close()
	dir := path.Join(target.Path, proxmox.ContentDirs["iso"])
	if err := to.MkdirAll(ctx, dir); err != nil {
		return err
	}
	sum := isotemplate.NewHash(img.ChecksumAlgorithm)
	pr, pw := io.Pipe()
	go func() {
		_, err := from.CopyFile(ctx, path.Join(w.server.Storages[source].Path, proxmox.ContentDirs["iso"], file), io.MultiWriter(pw, sum))
		pw.CloseWithError(err)
	}()
	if err := to.Upload(ctx, path.Join(dir, file), pr, 0o644); err != nil {
		_ = pr.CloseWithError(err) // stops the reading side
		return fmt.Errorf("copy ISO %s to node %s: %w", w.iso.Name, w.node.Name, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != img.Checksum {
		// What was read is not the image the ISO verified: the copy must not be booted.
		if err := client.Delete(ctx, proxmox.ContentPath(w.node.Name, target.Name, volid), nil); err != nil {
			out.Say("warning: could not delete the bad copy %s: %v", volid, err)
		}
		return fmt.Errorf("the copy of ISO %s has %s checksum %s, expected %s: its image on node %s changed since it was built",
			w.iso.Name, img.ChecksumAlgorithm, got, img.Checksum, a.Node)
	}
	if err := store.ISOCopyPut(ctx, h.DB, horizon.ISOCopy{ISOID: w.iso.ID, Node: w.node.Name, Storage: target.Name, VolID: volid,
		Checksum: img.Checksum, ChecksumAlgorithm: img.ChecksumAlgorithm, Size: img.Size}); err != nil {
		return err
	}
	out.Say("ISO %s: copied to %s on node %s, %s checksum %s verified", w.iso.Name, volid, w.node.Name, img.ChecksumAlgorithm, img.Checksum)
	w.isoCopy = volid
	return nil
}
