package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"horizon/functions/app"
	"horizon/shared/auth"
	"horizon/shared/config"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// benchAPI compares Horizon's endpoints with bare Fiber handlers doing the same database work
// on the same pool: /healthz vs hello, an authenticated network
// read vs the same single-row read, an address insert vs the same insert.
func benchAPI(ctx context.Context) error {
	env, err := newBenchEnv(ctx)
	if err != nil {
		return err
	}
	defer env.Close()

	hAddr, err := serveHorizon(ctx, env)
	if err != nil {
		return err
	}
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/hello", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	bare.Get("/networks/:id", func(c *fiber.Ctx) error {
		id, err := uuid.Parse(c.Params("id"))
		if err != nil {
			return fiber.ErrBadRequest
		}
		n, err := store.NetworkGet(c.Context(), env.DB, id)
		if err != nil {
			return err
		}
		return c.JSON(n)
	})
	bare.Post("/networks/:id/addresses", func(c *fiber.Ctx) error {
		id, err := uuid.Parse(c.Params("id"))
		if err != nil {
			return fiber.ErrBadRequest
		}
		var body struct{ Name, IP string }
		if err := c.BodyParser(&body); err != nil {
			return fiber.ErrBadRequest
		}
		a, err := bareInsert(c.Context(), env.DB, id, body.Name, netip.MustParseAddr(body.IP))
		if err != nil {
			return err
		}
		return c.Status(201).JSON(a)
	})
	bAddr, err := serve(bare)
	if err != nil {
		return err
	}

	tok, err := benchAdmin(ctx, env)
	if err != nil {
		return err
	}
	netw, err := store.NetworkCreate(ctx, env.DB, horizon.Network{Name: "bench", CIDR: netip.MustParsePrefix("10.0.0.0/8"),
		Gateway: netip.MustParseAddr("10.0.0.1"), Bridge: "vmbr0"})
	if err != nil {
		return err
	}
	bearer := "Bearer " + tok
	netPath := "/v1/networks/" + netw.ID.String()

	const conns, dur = 32, 5 * time.Second
	fmt.Printf("API benchmark: %d connections, %s per run, loopback, Postgres and Redis local\n\n", conns, dur)

	get := func(path string, authd bool) request {
		return func(_ int64, req *fasthttp.Request) {
			req.SetRequestURI(path)
			if authd {
				req.Header.Set("Authorization", bearer)
			}
		}
	}
	// Addresses get unique names and IPs across every run: 10.0.0.2 onwards.
	var seq atomic.Int64
	seq.Store(1)
	post := func(path string, authd bool) request {
		return func(_ int64, req *fasthttp.Request) {
			n := seq.Add(1)
			var ip [4]byte
			binary.BigEndian.PutUint32(ip[:], uint32(10<<24+n))
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.SetRequestURI(path)
			if authd {
				req.Header.Set("Authorization", bearer)
			}
			req.SetBodyString(fmt.Sprintf(`{"name":"a%d","ip":"%s"}`, n, netip.AddrFrom4(ip)))
		}
	}

	compare := func(title string, goal float64, bareReq, horizonReq request) {
		closedLoop(bAddr, conns, time.Second, bareReq) // warm up both
		closedLoop(hAddr, conns, time.Second, horizonReq)
		b := closedLoop(bAddr, conns, dur, bareReq)
		h := closedLoop(hAddr, conns, dur, horizonReq)
		ratio := h.rps / b.rps
		fmt.Printf("%s\n  bare     %s\n  horizon  %s\n  ratio    %.2f× (goal ≥ %.1f×)\n", title, b, h, ratio, goal)
		half := openLoop(hAddr, h.rps/2, dur, horizonReq)
		fmt.Printf("  horizon at half its max (%.0f req/s): %s\n\n", h.rps/2, half)
	}
	compare("GET /healthz vs bare Fiber hello", 0.9, get("/hello", false), get("/healthz", false))
	compare("GET /v1/networks/{id} (bearer auth, rate limit) vs bare single-row read", 0.6, get("/networks/"+netw.ID.String(), false), get(netPath, true))
	compare("POST /v1/networks/{id}/addresses vs bare insert", 0.5, post("/networks/"+netw.ID.String()+"/addresses", false), post(netPath+"/addresses", true))
	return nil
}

// serveHorizon serves the Horizon API as production wires it (app.Open) on env's database and
// Redis, with the rate limit out of the way and the bare handlers' pool size, and returns its
// address.
func serveHorizon(ctx context.Context, env *benchEnv) (string, error) {
	settings := map[string]string{"HORIZON_DATABASE_URL": env.DatabaseURL + "&pool_max_conns=32", "HORIZON_REDIS_URL": env.RedisURL,
		"HORIZON_NAMESPACE": env.NS, "HORIZON_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, secrets.KeySize)),
		"HORIZON_RATE_LIMIT": "1000000000/1m", "HORIZON_GIT_CACHE_DIR": filepath.Join(os.TempDir(), "horizon-bench-git")}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := settings[k]; return v, ok })
	if err != nil {
		return "", err
	}
	srv, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return "", err
	}
	go func() { _ = srv.Serve(ctx, ln) }() // runs until the benchmark's process exits
	return ln.Addr().String(), nil
}

// benchAdmin makes an admin user and returns a token of theirs.
func benchAdmin(ctx context.Context, env *benchEnv) (string, error) {
	user, err := store.UserCreate(ctx, env.DB, store.NewUser{Name: "bench", Email: "bench@example.org", Role: auth.RoleAdmin, Teams: []uuid.UUID{}})
	if err != nil {
		return "", err
	}
	tok := auth.NewToken().Reveal()
	_, err = store.TokenCreate(ctx, env.DB, user.ID, "bench", auth.TokenFull, auth.HashToken(tok))
	return tok, err
}

func serve(a *fiber.App) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = a.Listener(ln) }() // runs until the process exits
	return ln.Addr().String(), nil
}

// bareInsert is the floor for the address insert: the one INSERT, no audit record.
func bareInsert(ctx context.Context, db *pgxpool.Pool, network uuid.UUID, name string, ip netip.Addr) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, `INSERT INTO addresses (network_id, name, ip) VALUES ($1, $2, $3) RETURNING id`, network, name, ip).Scan(&id)
	return id, err
}
