// Package apitest runs the real API app for tests: on a real listener, with a real Postgres
// database and Redis namespace of the test's own, and checks every response the test receives
// against openapi/openapi.yaml.
package apitest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/functions/api"
	"horizon/functions/app"
	"horizon/functions/stream"
	"horizon/openapi"
	"horizon/shared/auth"
	"horizon/shared/config"
	"horizon/shared/logstream"
	"horizon/shared/notify"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// Server is a running API for one test.
type Server struct {
	URL   string
	App   *fiber.App
	DB    *pgxpool.Pool
	Redis *redis.Client
	Deps  api.Deps
	// Admin is the token of an admin user created for the test.
	Admin   string
	AdminID uuid.UUID
	// SecretKey is the server's HORIZON_SECRET_KEY, for processes that must open its secrets.
	SecretKey []byte

	cfg    config.Config // database, Redis, namespace and key, for replicas
	t      testing.TB
	router routers.Router
	client *http.Client
}

// Options tune the app for a test.
type Options struct {
	RateLimit  int
	RateWindow time.Duration
	// CORSOrigins are the allowed browser origins.
	CORSOrigins []string
	// GitCAFile is the CA bundle the git source cache trusts (HORIZON_GIT_CA_FILE), e.g. a test
	// server's.
	GitCAFile string
	// Streams tunes the streamed responses (heartbeat, write timeout, most open at once);
	// StreamBuffer is each event stream's buffer for a slow client (HORIZON_SSE_BUFFER).
	Streams      stream.Config
	StreamBuffer int
	// Logs tunes the log streams (MaxLen, Retention).
	Logs logstream.Config
	// Readers is the pool size of the stream readers' Redis client: one connection per run
	// followed at once (HORIZON_SSE_READERS); default 32.
	Readers int
	// Log, when set, receives the API's every log line from debug level up (every request is
	// logged at debug), instead of the test log's warnings: a test reads what operators would.
	Log io.Writer
	// DatabaseURL and RedisURL, when set, replace the test's own database and Redis: the
	// failover tests point the API at a Postgres pair and at Redis Sentinels. The database must
	// be empty (the API migrates it); the namespace is still the test's own.
	DatabaseURL, RedisURL string
	// SendBuffer, when set, is the kernel send buffer (SO_SNDBUF) of every connection the
	// server accepts. Linux otherwise grows it to megabytes, which a test of a paused client
	// would have to fill before the server's own writes block.
	SendBuffer int
	// Webhooks are the webhook destinations' allowed ranges and resolver (nil: the system's).
	Webhooks notify.Guard
}

// New starts the API, as functions/main.go does (app.Open), on a database and a Redis
// namespace of the test's own. opts may be nil.
func New(t testing.TB, opts *Options) *Server {
	t.Helper()
	var dbURL, redisURL, ns string
	var db *pgxpool.Pool
	if opts != nil && opts.DatabaseURL != "" {
		dbURL = opts.DatabaseURL
	} else {
		db = testkit.DB(t)
		dbURL = db.Config().ConnString()
	}
	if opts != nil && opts.RedisURL != "" {
		redisURL, ns = opts.RedisURL, "t"+uuid.NewString()[:12]
	} else {
		_, ns = testkit.Redis(t)
		redisURL = testkit.RedisURL()
	}
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	admin := auth.NewToken()
	s := start(t, config.Config{DatabaseURL: dbURL, RedisURL: redisURL, Namespace: ns, SecretKey: key,
		BootstrapAdminToken: admin}, opts)
	if db != nil {
		s.DB = db // else the API's own pool, which follows a failover
	}
	// The admin is the bootstrap admin production makes from HORIZON_BOOTSTRAP_ADMIN_TOKEN.
	s.Admin = admin.Reveal()
	if err := s.DB.QueryRow(context.Background(), `SELECT user_id FROM api_tokens WHERE hash = $1`, auth.HashToken(s.Admin)).Scan(&s.AdminID); err != nil {
		t.Fatalf("the bootstrap admin: %v", err)
	}
	return s
}

// NewFirstRun starts the API on an installation with no admin yet, as a first start in
// production is (no HORIZON_BOOTSTRAP_ADMIN_TOKEN), and returns it with a valid one-time setup
// token, as the one the API logged. Admin and AdminID are empty.
func NewFirstRun(t testing.TB, opts *Options) (*Server, string) {
	t.Helper()
	db := testkit.DB(t)
	_, ns := testkit.Redis(t)
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	s := start(t, config.Config{DatabaseURL: db.Config().ConnString(), RedisURL: testkit.RedisURL(), Namespace: ns, SecretKey: key}, opts)
	s.DB = db
	tok := auth.NewSetupToken()
	if issued, err := store.SetupTokenIssue(context.Background(), db, auth.HashToken(tok.Reveal()), time.Hour); err != nil || !issued {
		t.Fatalf("a setup token on a first run: issued %v, %v", issued, err)
	}
	return s, tok.Reveal()
}

// Replica starts a second API process on the same database, Redis namespace and secret key,
// as another replica behind a load balancer would be.
func (s *Server) Replica(opts *Options) *Server {
	s.t.Helper()
	r := start(s.t, s.cfg, opts)
	r.DB, r.Admin, r.AdminID = s.DB, s.Admin, s.AdminID
	return r
}

// start opens the API on base (database, Redis, namespace, key) with the settings of opts and
// production's defaults otherwise, and serves it on a loopback port until the test ends.
func start(t testing.TB, base config.Config, opts *Options) *Server {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	env := map[string]string{"HORIZON_DATABASE_URL": base.DatabaseURL, "HORIZON_REDIS_URL": base.RedisURL,
		"HORIZON_NAMESPACE": base.Namespace, "HORIZON_SECRET_KEY": base64.StdEncoding.EncodeToString(base.SecretKey),
		"HORIZON_BOOTSTRAP_ADMIN_TOKEN": base.BootstrapAdminToken.Reveal()}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cfg.RequestTimeout = 10 * time.Second
	cfg.RateLimit, cfg.RateWindow = cmp.Or(opts.RateLimit, 100000), cmp.Or(opts.RateWindow, time.Minute)
	cfg.CORSOrigins = opts.CORSOrigins
	cfg.GitCacheDir, cfg.GitCAFile = testkit.GitCacheDir(t), opts.GitCAFile
	cfg.SSEHeartbeat = cmp.Or(opts.Streams.Heartbeat, cfg.SSEHeartbeat)
	cfg.SSEWriteTimeout = cmp.Or(opts.Streams.WriteTimeout, cfg.SSEWriteTimeout)
	cfg.SSEMaxStreams = cmp.Or(opts.Streams.MaxStreams, cfg.SSEMaxStreams)
	cfg.SSEBuffer = cmp.Or(opts.StreamBuffer, cfg.SSEBuffer)
	cfg.SSEReaders = cmp.Or(opts.Readers, 32)
	cfg.LogMaxLen = cmp.Or(opts.Logs.MaxLen, cfg.LogMaxLen)
	cfg.LogRetention = cmp.Or(opts.Logs.Retention, cfg.LogRetention)
	cfg.WebhookAllowCIDRs, cfg.WebhookResolve = opts.Webhooks.Allow, opts.Webhooks.Resolve
	cfg.WebhookTimeout = 2 * time.Second

	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if opts.Log != nil {
		log = slog.New(slog.NewTextHandler(opts.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := app.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the auth cache did not subscribe to evictions", srv.Deps.Auth.Live)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.SendBuffer > 0 {
		ln = sendBufferListener{ln, opts.SendBuffer}
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ctx, ln) // best effort: the test is over when it returns
	}()
	t.Cleanup(func() {
		stop()
		<-served
		srv.Close()
	})
	return &Server{URL: "http://" + ln.Addr().String(), App: srv.App, DB: srv.Deps.DB, Redis: srv.Deps.Redis.(*redis.Client),
		Deps: srv.Deps, SecretKey: cfg.SecretKey, cfg: base, t: t, router: Router(t), client: &http.Client{Timeout: 30 * time.Second}}
}

// registerDecoders registers, once per process, body decoders for the streamed media types.
var registerDecoders sync.Once

// Router returns a router over the OpenAPI document, failing the test if it does not load or
// validate.
func Router(t testing.TB) routers.Router {
	t.Helper()
	registerDecoders.Do(func() {
		// The streamed bodies are text; their schemas say only that.
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
	})
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is invalid: %v", err)
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("route openapi.yaml: %v", err)
	}
	return r
}

// NewUser creates a user with role, member of teams, and returns its id and a token of it. It
// writes through the store, not the API, so tests can set up users without an admin call.
func (s *Server) NewUser(role auth.Role, teams ...uuid.UUID) (uuid.UUID, string) {
	s.t.Helper()
	ctx := context.Background()
	if teams == nil {
		teams = []uuid.UUID{}
	}
	u, err := store.UserCreate(ctx, s.DB, store.NewUser{Name: string(role) + " user", Email: uuid.NewString()[:8] + "@example.org", Role: role, Teams: teams})
	if err != nil {
		s.t.Fatalf("create user: %v", err)
	}
	tok := auth.NewToken()
	if _, err := store.TokenCreate(ctx, s.DB, u.ID, "test", auth.TokenFull, auth.HashToken(tok.Reveal())); err != nil {
		s.t.Fatalf("create token: %v", err)
	}
	return u.ID, tok.Reveal()
}

// NewTeam creates a team through the store.
func (s *Server) NewTeam(name string) uuid.UUID {
	s.t.Helper()
	team, err := store.TeamCreate(context.Background(), s.DB, name)
	if err != nil {
		s.t.Fatalf("create team: %v", err)
	}
	return team.ID
}

// Response is what a request got.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	t      testing.TB
}

// JSON decodes the body into v, failing the test if it does not decode.
func (r *Response) JSON(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.t.Fatalf("decode response %d %s: %v", r.Status, r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.JSON(&m)
	return m
}

// Problem is a decoded problem+json body.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	RequestID string `json:"request_id"`
	Errors    []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
	Stacks []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"stacks"`
}

// Problem decodes a problem body, failing the test unless the response is problem+json.
func (r *Response) Problem() Problem {
	r.t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		r.t.Fatalf("got content type %q (%d %s), want application/problem+json", ct, r.Status, r.Body)
	}
	var p Problem
	r.JSON(&p)
	return p
}

// Fields returns the fields a problem names.
func (p Problem) Fields() []string {
	var fs []string
	for _, e := range p.Errors {
		fs = append(fs, e.Field)
	}
	return fs
}

// For returns the server as seen by t: its requests fail t, not the test that started it. A
// fuzz target starts one server in its *testing.F and sends every input's requests through
// For(t) of that input's *testing.T.
func (s *Server) For(t testing.TB) *Server {
	c := *s
	c.t = t
	return &c
}

// Req describes a request beyond method and path.
type Req struct {
	// Token is the bearer token; "" means the admin's, and NoToken sends none.
	Token string
	// Body is marshalled as JSON unless it is a []byte or string, which are sent as is.
	Body    any
	Headers map[string]string
}

// NoToken sends a request without Authorization.
const NoToken = "-"

// Do sends a request and checks the response against the OpenAPI document.
func (s *Server) Do(method, path string, r Req) *Response {
	s.t.Helper()
	var body io.Reader
	var raw []byte
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			s.t.Fatal(err)
		}
	}
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch r.Token {
	case "":
		req.Header.Set("Authorization", "Bearer "+s.Admin)
	case NoToken:
	default:
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: got, t: s.t}
	s.checkContract(req, raw, out)
	// A Location is a promise to the caller it is given to: every test that gets one checks,
	// in passing, that it answers: 200, or 503 when the server is shedding load (a benchmark's
	// burst), which promises an answer later.
	if loc := out.Header.Get("Location"); loc != "" && out.Status/100 == 2 && method != http.MethodGet {
		if f := s.Do(http.MethodGet, loc, Req{Token: r.Token}); f.Status != http.StatusOK && f.Status != http.StatusServiceUnavailable {
			s.t.Fatalf("%s %s answered %d with Location %s, which answers %d %s", method, path, out.Status, loc, f.Status, f.Body)
		}
	}
	return out
}

// checkContract fails the test when the response does not match openapi.yaml: an undocumented
// route, status, header or body shape.
func (s *Server) checkContract(req *http.Request, reqBody []byte, res *Response) {
	s.t.Helper()
	if req.Method == http.MethodOptions {
		return // CORS preflights are answered by middleware and not part of the contract
	}
	// The router needs a request whose body can be read again.
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := s.router.FindRoute(vreq)
	if err != nil {
		switch res.Status {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnauthorized:
			// An unknown route, answered as such (authentication comes before routing, so
			// without a token it is a 401): still a problem, but nothing else to check.
			if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
				s.t.Fatalf("%s %s answered %d without a problem body", req.Method, req.URL.Path, res.Status)
			}
			return
		}
		s.t.Fatalf("%s %s answered %d but is not in openapi.yaml: %v", req.Method, req.URL.Path, res.Status, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  res.Status,
		Header:  res.Header,
		Body:    io.NopCloser(bytes.NewReader(res.Body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		s.t.Fatalf("%s %s: response %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Body)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// DoLarge sends a request whose body the server may refuse before reading it (413): the body
// is written concurrently with reading the answer, over a raw connection, so that the server
// closing the connection early does not hide its response. It checks the contract like Do.
func (s *Server) DoLarge(method, path string, body []byte) *Response {
	s.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Admin)
	go func() { _ = req.Write(conn) }() // the server may stop reading: a write error is expected
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		s.t.Fatalf("%s %s: read response: %v", method, path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: got, t: s.t}
	creq, _ := http.NewRequest(method, s.URL+path, nil)
	creq.Header = req.Header
	s.checkContract(creq, nil, out)
	return out
}

// sendBufferListener sets the send buffer of the connections it accepts.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size) // a test setting; the kernel's default is as good on failure
	}
	return c, err
}
