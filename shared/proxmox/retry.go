package proxmox

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// retryTransport retries the transient failures described in the package doc.
type retryTransport struct {
	base     http.RoundTripper
	attempts int
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		res, err := t.base.RoundTrip(req)
		if attempt >= t.attempts || !retryable(req, res, err) || req.Context().Err() != nil {
			return res, err
		}
		if req.Body != nil {
			if req.GetBody == nil {
				return res, err // the body cannot be sent again
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return res, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		if res != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // drain to reuse the connection
			_ = res.Body.Close()
		}
		sleep := backoff/2 + rand.N(backoff/2+1)
		if err := sleepCtx(req.Context(), sleep); err != nil {
			return nil, err
		}
		backoff *= 4
	}
}

func retryable(req *http.Request, res *http.Response, err error) bool {
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return true // the request never left: always safe
		}
		var ne net.Error
		idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodPut || req.Method == http.MethodDelete
		return idempotent && errors.As(err, &ne) && ne.Timeout()
	}
	switch res.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusInternalServerError:
		// PVE puts the first line of its message in the status line.
		return TransientMessage(res.Status)
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
