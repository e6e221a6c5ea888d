package isos

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
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

// storageItem is one volume of a storage's content list.
type storageItem struct {
	VolID string `json:"volid"`
	Size  int64  `json:"size"`
	CTime int64  `json:"ctime"`
}

// findVolume looks volid up in a storage's content of one type.
func findVolume(ctx context.Context, c *proxmox.Client, node, storage, content, volid string) (storageItem, bool, error) {
	var items []storageItem
	path := fmt.Sprintf("/nodes/%s/storage/%s/content?content=%s", url.PathEscape(node), url.PathEscape(storage), content)
	if err := c.Get(ctx, path, &items); err != nil {
		return storageItem{}, false, err
	}
	i := slices.IndexFunc(items, func(it storageItem) bool { return it.VolID == volid })
	if i < 0 {
		return storageItem{}, false, nil
	}
	return items[i], true, nil
}

// image makes sure the spec's image is on the storage with the right checksum: a cached file
// is kept when its checksum is known right, else it is replaced; a download is retried with
// backoff while it fails for another reason than its checksum, then verified.
func (h *Handler) image(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	src := w.spec.Source
	content := imageContent(w.iso.Kind)
	node, storage := w.iso.Node, w.iso.Storage
	volid := storage + ":" + content + "/" + src.FileName
	base := fmt.Sprintf("/nodes/%s/storage/%s", url.PathEscape(node), url.PathEscape(storage))

	item, found, err := findVolume(ctx, c, node, storage, content, volid)
	if err != nil {
		return result{}, err
	}
	if found {
		if rec := w.iso.Outputs.Image; rec != nil && rec.VolID == volid && rec.Checksum == src.Checksum &&
			rec.ChecksumAlgorithm == src.ChecksumAlgorithm && rec.Size == item.Size && rec.CTime == item.CTime {
			out.Say("image cached: %s (%d bytes) is the file this ISO downloaded and verified (%s) on %s", volid, item.Size,
				src.ChecksumAlgorithm, rec.VerifiedAt.Format(time.RFC3339))
			return result{skipped: true, reason: "image cached: " + volid}, nil
		}
		out.Say("%s is already on storage %s: verifying its %s checksum over SSH", volid, storage, src.ChecksumAlgorithm)
		got, err := h.checksumOnNode(ctx, w, storage, content, src.FileName, src.ChecksumAlgorithm)
		switch {
		case err != nil && ctx.Err() != nil:
			return result{}, err
		case err != nil:
			out.Say("cannot verify the cached %s (%v): replacing it", volid, err)
		case got == src.Checksum:
			out.Say("image cached: %s (%d bytes), %s checksum %s verified on node %s", volid, item.Size, src.ChecksumAlgorithm, got, node)
			rec := horizon.ISOImage{VolID: volid, Storage: storage, Checksum: got, ChecksumAlgorithm: src.ChecksumAlgorithm,
				Size: item.Size, CTime: item.CTime, VerifiedAt: time.Now().UTC()}
			return result{skipped: true, reason: "image cached: " + volid + " (checksum verified)", outputs: []output{{key: "image", value: rec}}}, nil
		default:
			out.Say("the cached %s has %s checksum %s, expected %s: replacing it", volid, src.ChecksumAlgorithm, got, src.Checksum)
		}
		// Replacing a file another ISO built from would change what that ISO's machines boot.
		if other, err := h.otherImageUser(ctx, w, volid); err != nil {
			return result{}, err
		} else if other != nil {
			return result{}, fmt.Errorf("storage %s already holds %s for ISO %s, from another source (%s %s): set source.file_name to a name of this ISO's own",
				storage, src.FileName, other.Name, other.Outputs.Image.ChecksumAlgorithm, other.Outputs.Image.Checksum)
		}
		if err := h.do(ctx, c, "DELETE", node, proxmox.ContentPath(node, storage, volid), nil, out); err != nil {
			return result{}, fmt.Errorf("delete the stale %s: %w", volid, err)
		}
	}

	err = h.download(ctx, c, w, base, content, volid, out)
	if errors.Is(err, proxmox.ErrFileExists) {
		// Another attempt's download (a worker that died while Proxmox went on) put it there.
		out.Say("%s appeared on storage %s meanwhile: verifying its %s checksum over SSH", volid, storage, src.ChecksumAlgorithm)
		got, err := h.checksumOnNode(ctx, w, storage, content, src.FileName, src.ChecksumAlgorithm)
		if err != nil {
			return result{}, fmt.Errorf("verify %s: %w", volid, err)
		}
		if got != src.Checksum {
			return result{}, fmt.Errorf("checksum mismatch for %s on storage %s: expected %s %s, got %s", volid, storage, src.ChecksumAlgorithm, src.Checksum, got)
		}
		out.Say("%s checksum %s of %s verified on node %s", src.ChecksumAlgorithm, got, volid, node)
	} else if err != nil {
		return result{}, err
	}
	item, found, err = findVolume(ctx, c, node, storage, content, volid)
	switch {
	case err != nil:
		return result{}, err
	case !found:
		return result{}, fmt.Errorf("the download of %s reported success, but storage %s does not list %s", src.URL, storage, volid)
	case item.Size <= 0:
		return result{}, fmt.Errorf("the downloaded %s is empty", volid)
	}
	out.Say("verified: %s is on storage %s, %d bytes; Proxmox checked its %s checksum %s while downloading", volid, storage,
		item.Size, src.ChecksumAlgorithm, src.Checksum)
	rec := horizon.ISOImage{VolID: volid, Storage: storage, Checksum: src.Checksum, ChecksumAlgorithm: src.ChecksumAlgorithm,
		Size: item.Size, CTime: item.CTime, VerifiedAt: time.Now().UTC()}
	return result{reason: fmt.Sprintf("downloaded %s (%d bytes, %s verified)", volid, item.Size, src.ChecksumAlgorithm),
		outputs: []output{{key: "image", value: rec}}}, nil
}

// otherImageUser returns another ISO whose image is the file volid on this ISO's node (or on a
// shared storage) and was verified with other content than this ISO's source, or nil. Called
// when that file's content is not this ISO's source: it was replaced or damaged since. Sharing
// a file name is not what matters, its content is: another ISO that verified the checksum this
// build expects built from the same bytes, and putting them back repairs its image too.
func (h *Handler) otherImageUser(ctx context.Context, w *work, volid string) (*horizon.ISO, error) {
	others, err := store.ISOsWithImage(ctx, h.DB, w.iso.ServerID, volid, w.iso.ID)
	if err != nil {
		return nil, err
	}
	storage, _, _ := strings.Cut(volid, ":")
	shared := slices.ContainsFunc(w.server.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == storage && s.Shared })
	src := w.spec.Source
	for i, o := range others {
		img := o.Outputs.Image
		if !(shared || o.Node == w.iso.Node) || img == nil {
			continue
		}
		// Checksums of one algorithm name the content. Of two algorithms they cannot be
		// compared: the other ISO is kept safe, as one of another source.
		if strings.EqualFold(img.ChecksumAlgorithm, src.ChecksumAlgorithm) && strings.EqualFold(img.Checksum, src.Checksum) {
			continue
		}
		return &others[i], nil
	}
	return nil, nil
}

// download runs download-url until it succeeds, fails for its checksum (at once: a new attempt
// would fetch the same bytes), or has failed DownloadAttempts times.
func (h *Handler) download(ctx context.Context, c *proxmox.Client, w *work, base, content, volid string, out *attempt.Log) error {
	src := w.spec.Source
	attempts := h.DownloadAttempts
	if attempts <= 0 {
		attempts = 3
	}
	pause := h.backoff()
	body := map[string]any{"content": content, "filename": src.FileName, "url": src.URL, "checksum": src.Checksum,
		"checksum-algorithm": src.ChecksumAlgorithm, "verify-certificates": boolInt(src.VerifyCertificates == nil || *src.VerifyCertificates)}
	for try := 1; ; try++ {
		out.Say("downloading %s to %s (attempt %d/%d)", src.URL, volid, try, attempts)
		err := h.do(ctx, c, "POST", w.iso.Node, base+"/download-url", body, out)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		var mismatch *proxmox.ChecksumMismatchError
		if errors.As(err, &mismatch) {
			return fmt.Errorf("checksum mismatch for %s: expected %s %s, got %s", src.URL, src.ChecksumAlgorithm, mismatch.Expected, mismatch.Got)
		}
		if errors.Is(err, proxmox.ErrFileExists) {
			return err
		}
		var pe *proxmox.Error
		if errors.As(err, &pe) && pe.Status >= 400 && pe.Status < 500 { // an answer, not a task
			return fmt.Errorf("download of %s refused by Proxmox: %w", src.URL, err) // a request it will always refuse
		}
		if try >= attempts {
			return fmt.Errorf("download of %s failed %d times; the last: %s", src.URL, attempts, attempt.FirstLine(err.Error()))
		}
		out.Say("download attempt %d/%d failed: %s; retrying in %s", try, attempts, attempt.FirstLine(err.Error()), pause)
		if !sleep(ctx, pause) {
			return ctx.Err()
		}
		pause *= 2
	}
}

// checksumOnNode reads a file of a storage over SFTP from the ISO's node and returns its digest.
func (h *Handler) checksumOnNode(ctx context.Context, w *work, storage, content, file, algo string) (string, error) {
	i := slices.IndexFunc(w.server.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == storage })
	if i < 0 || w.server.Storages[i].Path == "" {
		return "", fmt.Errorf("no path for storage %s in Horizon's inventory of %s", storage, w.server.Name)
	}
	sc, err := h.dialNode(ctx, w)
	if err != nil {
		return "", err
	}
	defer sc.Close()
	hh := isotemplate.NewHash(algo)
	if _, err := sc.CopyFile(ctx, path.Join(w.server.Storages[i].Path, proxmox.ContentDirs[content], file), hh); err != nil {
		return "", err
	}
	return hex.EncodeToString(hh.Sum(nil)), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
