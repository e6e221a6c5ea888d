package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
	notifyw "horizon/workers/notify"
)

// message is one request a receiver got.
type message struct {
	header http.Header
	body   []byte
	at     time.Time // by the receiver's clock, when the request reached it
}

// receiver is a destination on loopback: it answers with the next of its statuses (the last one
// for ever), after delay, and keeps what it got.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []message
	delay    atomic.Int64
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		if d := time.Duration(r.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-req.Context().Done():
			}
		}
		r.mu.Lock()
		r.got = append(r.got, message{req.Header.Clone(), body, at})
		status := r.statuses[0]
		if len(r.statuses) > 1 {
			r.statuses = r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) messages() []message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]message(nil), r.got...)
}

func (r *receiver) setStatuses(s ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = s
}

// env is the API (to subscribe, and for its database and Redis) and the delivery handler.
type env struct {
	api      *apitest.Server
	h        notifyw.Handler
	resolved atomic.Pointer[netip.Addr]
	// guard is the destinations' check the API and the handler use.
	guard notify.Guard
}

const console = "https://console.example.test"

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{}
	loop := netip.MustParseAddr("127.0.0.1")
	e.resolved.Store(&loop)
	// Names resolve to what the test says; the receivers' loopback address is allowed, as an
	// operator would allow an in-house destination.
	guard := notify.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolve: func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{*e.resolved.Load()}, nil }}
	e.guard = guard
	e.api = apitest.New(t, &apitest.Options{Webhooks: guard})
	box, err := secrets.NewBox(e.api.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	d := e.api.Deps
	e.h = notifyw.Handler{DB: e.api.DB, Redis: e.api.Redis, Box: box, Queues: d.Queues, Enqueue: d.Queue, Namespace: d.Namespace,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Lease: time.Second,
		Sender: notify.NewSender(notify.Config{Guard: guard, Timeout: 500 * time.Millisecond, ConsoleURL: console})}
	return e
}

// subscribe makes an enabled subscription of team to events at url (through the API, which
// sends it a test message) and returns its id and secret.
func (e *env) subscribe(t *testing.T, team uuid.UUID, kind, url string, events ...string) (string, string) {
	t.Helper()
	r := e.api.Do("POST", "/v1/webhooks", apitest.Req{Body: map[string]any{"team_id": team, "name": "bot-" + uuid.NewString()[:8],
		"kind": kind, "url": url, "events": events, "enabled": true}})
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string), r.Map()["secret"].(string)
}

// deliverDue runs one attempt of every due delivery through the handler, as the tasks the
// dispatch sweep enqueues would.
func (e *env) deliverDue(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ds, err := store.DeliveriesClaimDue(ctx, e.api.DB, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if _, err := e.h.Attempt(ctx, queue.WebhookDeliver{DeliveryID: d.ID, Attempt: d.Attempts + 1}); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) deliveries(t *testing.T, webhook string) []map[string]any {
	t.Helper()
	r := e.api.Do("GET", "/v1/webhooks/"+webhook+"/deliveries", apitest.Req{})
	if r.Status != 200 {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	var l struct{ Items []map[string]any }
	r.JSON(&l)
	return l.Items
}

// runQueued runs the webhook:deliver tasks waiting in the notify queue (those the API hands
// over at once), as a worker would.
func (e *env) runQueued(t *testing.T) {
	t.Helper()
	inspector := asynq.NewInspector(asynq.RedisClientOpt{Addr: e.api.Redis.Options().Addr})
	defer inspector.Close()
	tasks, err := inspector.ListPendingTasks(e.h.Queues.Notify)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		_ = inspector.DeleteTask(e.h.Queues.Notify, task.ID)
		if err := e.h.ProcessTask(context.Background(), asynq.NewTask(task.Type, task.Payload)); err != nil {
			t.Fatal(err)
		}
	}
}

// verify checks a standard message's signature independently of the library that signed it:
// HMAC-SHA256 of id.timestamp.body under the base64 key after whsec_ (the specification).
func verify(t *testing.T, secret string, m message) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(m.header.Get("webhook-id") + "." + m.header.Get("webhook-timestamp") + "."))
	mac.Write(m.body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !strings.Contains(" "+m.header.Get("webhook-signature")+" ", " "+want+" ") {
		t.Errorf("webhook-signature %q lacks %q", m.header.Get("webhook-signature"), want)
	}
	if !strings.HasPrefix(m.header.Get("webhook-id"), "msg_") || m.header.Get("webhook-timestamp") == "" {
		t.Errorf("headers %v", m.header)
	}
}

// thinKeys are the only keys a payload's data may have.
var thinKeys = map[string]bool{"run_id": true, "run_kind": true, "result": true, "stack_id": true, "stack_name": true,
	"team_id": true, "team_name": true, "actor_id": true, "actor_name": true, "started_at": true, "finished_at": true,
	"error": true, "from_state": true, "to_state": true, "at": true, "iso_id": true, "iso_name": true, "state": true,
	"webhook_id": true, "console_url": true}

// TestRunResultsAreSignedThinAndRetried: a run's end reaches its team's subscription (and not
// another team's), signed; a 500 is retried and the retry delivered; the payload carries only
// the thin keys and none of the stack's other fields, the secret or the URL's path.
func TestRunResultsAreSignedThinAndRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red, blue := e.api.NewTeam("red"), e.api.NewTeam("blue")
	rcv := newReceiver(t, 200, 500, 200)
	id, secret := e.subscribe(t, red, "standard", rcv.URL+"/hooks/SECRETPATH", "run.finished", "stack.state_changed")
	other := newReceiver(t, 200)
	e.subscribe(t, blue, "standard", other.URL, "run.finished")

	stack := e.api.NewStack(red, "web")
	if _, err := e.api.DB.Exec(context.Background(), `UPDATE stacks SET description = 'SENTINEL-DESCRIPTION' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	e.api.FinishRun(e.api.NewRun(stack), horizon.RunFailed)
	e.deliverDue(t)
	if got := len(rcv.messages()); got != 2 { // the enabling test message, then the 500
		t.Fatalf("%d messages, want 2", got)
	}
	ds := e.deliveries(t, id)
	if len(ds) != 1 || ds[0]["state"] != "pending" || ds[0]["last_status"] != 500.0 || ds[0]["next_attempt_at"] == nil {
		t.Fatalf("after a 500: %v", ds)
	}
	testkit.Eventually(t, 15*time.Second, "the retry was not delivered", func() bool {
		e.deliverDue(t)
		ds = e.deliveries(t, id)
		return ds[0]["state"] == "delivered"
	})
	if ds[0]["attempts"] != 2.0 || ds[0]["last_status"] != 200.0 {
		t.Errorf("delivered: %v", ds[0])
	}
	msgs := rcv.messages()
	if msgs[1].header.Get("webhook-id") != msgs[2].header.Get("webhook-id") {
		t.Errorf("the retry has another webhook-id")
	}
	for _, m := range msgs {
		verify(t, secret, m)
		for _, bad := range []string{"SENTINEL", "SECRETPATH", strings.TrimPrefix(secret, "whsec_")} {
			if strings.Contains(string(m.body), bad) {
				t.Errorf("a payload carries %s: %s", bad, m.body)
			}
		}
		var env notify.Envelope
		if err := json.Unmarshal(m.body, &env); err != nil {
			t.Fatal(err)
		}
		for k := range env.Data {
			if !thinKeys[k] {
				t.Errorf("payload key %s is not a thin one: %s", k, m.body)
			}
		}
	}
	var last notify.Envelope
	_ = json.Unmarshal(msgs[2].body, &last)
	if last.Type != notify.RunFinished || last.Data["result"] != "failed" || last.Data["stack_name"] != "web" ||
		last.Data["console_url"] != console+"/#/stacks/"+stack.String() {
		t.Errorf("the run's message: %s", msgs[2].body)
	}
	if got := len(other.messages()); got != 1 {
		t.Errorf("another team's subscription got %d messages, want its test message only", got)
	}

	// Redelivery: the same event again, with the same webhook-id.
	r := e.api.Do("POST", "/v1/webhooks/"+id+"/deliveries/"+ds[0]["id"].(string)+"/redeliver", apitest.Req{})
	if r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	e.runQueued(t) // handed to the queue at once: no sweep claims it
	msgs = rcv.messages()
	if len(msgs) != 4 || msgs[3].header.Get("webhook-id") != msgs[2].header.Get("webhook-id") {
		t.Errorf("redelivered: %d messages", len(msgs))
	}
}

// TestGoneDisablesAndTimeoutRetries: a destination that answers slower than the attempt's
// timeout is retried; 410 Gone fails the delivery and disables the subscription.
func TestGoneDisablesAndTimeoutRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	rcv := newReceiver(t, 200)
	id, _ := e.subscribe(t, red, "standard", rcv.URL, "stack.state_changed")
	stack := e.api.NewStack(red, "web")
	rcv.delay.Store(int64(2 * time.Second))
	if _, err := store.StackSetState(context.Background(), e.api.DB, horizon.StateChange{StackID: stack, To: horizon.StackDeploying}); err != nil {
		t.Fatal(err)
	}
	e.deliverDue(t)
	ds := e.deliveries(t, id)
	if ds[0]["state"] != "pending" || ds[0]["last_error"] == nil || ds[0]["attempts"] != 1.0 {
		t.Fatalf("after a timeout: %v", ds[0])
	}
	rcv.delay.Store(0)
	rcv.setStatuses(410)
	testkit.Eventually(t, 15*time.Second, "the retry was not made", func() bool {
		e.deliverDue(t)
		return e.deliveries(t, id)[0]["state"] != "pending"
	})
	if d := e.deliveries(t, id)[0]; d["state"] != "failed" || d["last_status"] != 410.0 {
		t.Errorf("after a 410: %v", d)
	}
	w := e.api.Do("GET", "/v1/webhooks/"+id, apitest.Req{}).Map()
	if w["enabled"] != false || w["disabled_reason"] == nil {
		t.Errorf("after a 410 the subscription is %v", w)
	}
	// Disabled, it gets no more events.
	if _, err := store.StackSetState(context.Background(), e.api.DB, horizon.StateChange{StackID: stack, To: horizon.StackDeployed}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.deliveries(t, id)); n != 1 {
		t.Errorf("a disabled subscription has %d deliveries", n)
	}
}

// TestRefusedAddressAtDelivery: a name that resolved to an allowed address when the subscription
// was saved and resolves to a metadata address at delivery is refused when dialled: nothing
// reaches anything, the error is in the log.
func TestRefusedAddressAtDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	rcv := newReceiver(t, 200)
	port := rcv.URL[strings.LastIndexByte(rcv.URL, ':'):]
	id, _ := e.subscribe(t, red, "standard", "http://hooks.example.test"+port+"/x", "stack.state_changed")
	meta := netip.MustParseAddr("169.254.169.254")
	e.resolved.Store(&meta)
	r := e.api.Do("POST", "/v1/webhooks", apitest.Req{Body: map[string]any{"team_id": red, "name": "again",
		"url": "http://hooks.example.test" + port + "/x", "events": []string{"run.finished"}}})
	if r.Status != 422 {
		t.Errorf("creating with the name resolving to metadata: %d, want 422", r.Status)
	}
	if _, err := store.StackSetState(context.Background(), e.api.DB, horizon.StateChange{StackID: e.api.NewStack(red, "web"), To: horizon.StackDeploying}); err != nil {
		t.Fatal(err)
	}
	e.deliverDue(t)
	d := e.deliveries(t, id)[0]
	if errText, _ := d["last_error"].(string); d["last_status"] != nil || !strings.Contains(errText, "refused range") {
		t.Errorf("delivery to a metadata address: %v", d)
	}
	if n := len(rcv.messages()); n != 1 {
		t.Errorf("the receiver got %d messages, want only the test message", n)
	}
}

// TestLostTasksAreDeliveredAgain: the dispatch sweep queued the deliveries, then the worker
// that took them died with them (the queue is emptied, as a crash would lose them); once the
// claims' lease ends the next sweep queues them again and every event is delivered.
func TestLostTasksAreDeliveredAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	rcv := newReceiver(t, 200)
	id, _ := e.subscribe(t, red, "slack", rcv.URL, "stack.state_changed")
	ctx := context.Background()
	for i := range 3 {
		if _, err := store.StackSetState(ctx, e.api.DB, horizon.StateChange{StackID: e.api.NewStack(red, "web"+string(rune('a'+i))), To: horizon.StackDeploying}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.h.DispatchDue(ctx); err != nil || n != 3 {
		t.Fatalf("dispatch: %d, %v", n, err)
	}
	inspector := asynq.NewInspector(asynq.RedisClientOpt{Addr: e.api.Redis.Options().Addr})
	defer inspector.Close()
	if _, err := inspector.DeleteAllPendingTasks(e.h.Queues.Notify); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.h.DispatchDue(ctx); n != 0 {
		t.Fatalf("claimed deliveries were queued again at once: %d", n)
	}
	testkit.Eventually(t, 30*time.Second, "the lost deliveries were not all delivered", func() bool {
		if _, err := e.h.DispatchDue(ctx); err != nil {
			t.Fatal(err)
		}
		e.runQueued(t)
		for _, d := range e.deliveries(t, id) {
			if d["state"] != "delivered" {
				return false
			}
		}
		return true
	})
	msgs := rcv.messages()[1:] // after the test message
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3", len(msgs))
	}
	for _, m := range msgs {
		var body map[string]string
		if err := json.Unmarshal(m.body, &body); err != nil || len(body) != 1 || !strings.Contains(body["text"], "<"+console+"/#/stacks/") {
			t.Errorf("a Slack message is {\"text\": …} with a console link: %s", m.body)
		}
	}
}
