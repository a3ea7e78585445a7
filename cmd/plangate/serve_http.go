package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/engine"
	"github.com/plangate/plangate/core/machine"
	"github.com/plangate/plangate/core/metrics"
	"github.com/plangate/plangate/store"
)

// httpGrace is how long requests in flight at a stop may take to finish.
const httpGrace = 10 * time.Second

// webServer is the HTTP server of `plangate serve` (docs/design.md §10). A nil
// *webServer is the server switched off (http.listen empty): every method does nothing.
type webServer struct {
	srv     *httpserver.Server
	ln      net.Listener
	metrics *metrics.Metrics
	log     *slog.Logger
	done    chan error
	adminOn bool          // http.admin_token or http.admin_tokens is set
	tap     *adminapi.Tap // the engine's Sender, while the admin API is on
}

// listenHTTP binds http.listen before any channel connects, so a port in use stops the
// start at once, and registers the routes that do not belong to a channel: /metrics,
// the store's readiness check and /debug/pprof/ behind the admin token.
func listenHTTP(cfg *Config, st *store.Store, log *slog.Logger) (*webServer, error) {
	if cfg.HTTP.Listen == "" {
		return nil, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on http.listen %s: %w", cfg.HTTP.Listen, err)
	}
	m := metrics.New()
	st.OnCommit(m.StoreCommit) // before anything commits: the hook is not synchronized
	srv := httpserver.New(cfg.HTTP.server(), m, log)
	srv.Handle("GET /metrics", m.Handler())
	srv.AddCheck("store", st.Ping)
	registerPprof(srv)
	return &webServer{srv: srv, ln: ln, metrics: m, log: log, adminOn: cfg.HTTP.adminOn()}, nil
}

// adminSender is out wrapped in the admin API's tap when the API is on, so the API learns
// the engine's answer to each change it makes; otherwise out itself.
func (w *webServer) adminSender(out core.Sender) core.Sender {
	if w == nil || !w.adminOn {
		return out
	}
	w.tap = adminapi.NewTap(out)
	return w.tap
}

// registerAdmin mounts the admin API (/api/v1/...) when it is on. eng must hand changes
// to the engine under the work context, which outlives receiving (workHandler).
func (w *webServer) registerAdmin(st *store.Store, eng adminapi.Engine, now func() time.Time, reach machine.Reach) {
	if w == nil || w.tap == nil {
		return
	}
	adminapi.New(adminapi.Deps{Store: st, Engine: eng, Tap: w.tap, Log: w.log, Now: now, Reach: reach}).Register(w.srv)
}

// engine.Observer is what the engine reports to; the one Metrics of serve satisfies it.
var _ engine.Observer = (*metrics.Metrics)(nil)

// observe hands the server's Metrics to the Hub (replies, events the adapters drop) and returns it for the engine
// (everything else; listenHTTP gave it to the store). Without the HTTP server there is
// no /metrics, so nothing is counted: nil.
func (w *webServer) observe(hub *channels.Hub) engine.Observer {
	if w == nil {
		return nil
	}
	hub.OnReply(w.metrics.Reply)
	hub.OnInbound(w.metrics.Inbound)
	return w.metrics
}

// registerPprof serves net/http/pprof on the server's own mux as admin routes: 404
// without http.admin_token, 401 without the bearer token. (Importing the package also
// registers it on http.DefaultServeMux, which plangate never serves.)
func registerPprof(srv *httpserver.Server) {
	srv.HandleAdmin("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
	srv.HandleAdmin("GET /debug/pprof/cmdline", http.HandlerFunc(pprof.Cmdline))
	srv.HandleAdmin("GET /debug/pprof/profile", http.HandlerFunc(pprof.Profile))
	srv.HandleAdmin("GET /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	srv.HandleAdmin("POST /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	srv.HandleAdmin("GET /debug/pprof/trace", http.HandlerFunc(pprof.Trace))
}

// httpRoutes is what an adapter implements to receive over HTTP (webhooks, the web
// channel's pages): it adds its routes to the server before it runs.
type httpRoutes interface {
	RegisterHTTP(srv *httpserver.Server)
}

// track mounts the channels' own routes and returns the channels wrapped so that /readyz
// knows which of them are running, with a readiness check per channel. The wrappers are
// for running only: replies go through a Hub of the channels themselves, so no optional
// interface (Editor, Typer, Retirer, ...) is hidden by a wrapper.
func (w *webServer) track(chans []channels.Channel) []channels.Channel {
	if w == nil {
		return chans
	}
	out := make([]channels.Channel, 0, len(chans))
	for _, ch := range chans {
		if r, ok := unelected(ch).(httpRoutes); ok {
			r.RegisterHTTP(w.srv)
		}
		t := &trackedChannel{Channel: ch}
		w.srv.AddCheck(ch.Name(), t.check)
		out = append(out, t)
	}
	return out
}

// start serves until ctx ends; a server that fails calls stopAll, so serve stops rather
// than running on without its HTTP side. The routes of the channels and the admin API are
// added once they are open; announce logs that the server takes them.
func (w *webServer) start(ctx context.Context, stopAll context.CancelFunc) {
	if w == nil {
		return
	}
	w.done = make(chan error, 1)
	w.log.Info("http serving /healthz and /readyz", "addr", w.ln.Addr().String())
	go func() {
		err := w.srv.Run(ctx, w.ln, httpGrace)
		if err != nil {
			w.log.Error("http server failed", "err", err)
			stopAll()
		}
		w.done <- err
	}()
}

// announce logs that the server listens with every route in place.
func (w *webServer) announce() {
	if w != nil {
		w.log.Info("http listening", "addr", w.ln.Addr().String())
	}
}

// opening is the /readyz check "channels" that fails until serve has opened its channels
// and mounted their routes, saying why while a platform is tried again.
func (w *webServer) opening() *openingCheck {
	o := &openingCheck{}
	o.why.Store("opening the chat channels")
	if w != nil {
		w.srv.AddCheck("channels", o.check)
	}
	return o
}

// openingCheck is the state behind webServer.opening.
type openingCheck struct{ why atomic.Value } // a string; "" once open

func (o *openingCheck) set(why string) { o.why.Store(why) }
func (o *openingCheck) done()          { o.why.Store("") }
func (o *openingCheck) check(context.Context) error {
	if why := o.why.Load().(string); why != "" {
		return errors.New(why)
	}
	return nil
}

// wait returns once the server has stopped and the requests in flight have finished.
func (w *webServer) wait() error {
	if w == nil || w.done == nil {
		return nil
	}
	err := <-w.done
	if err == nil {
		w.log.Info("http server stopped")
	}
	return err
}

// close releases the listener of a server that never started (a start-up that failed
// after listenHTTP).
func (w *webServer) close() {
	if w != nil && w.done == nil {
		_ = w.ln.Close()
	}
}

// readier is what an adapter may implement to say whether it is connected (a websocket
// up, a webhook registered); nil means ready. Its error is shown on /readyz and must not
// contain a secret.
type readier interface {
	Ready() error
}

// trackedChannel records whether Run is going. Only Run and Name are used: it is handed to
// the Hub that runs the channels, not the one that sends.
type trackedChannel struct {
	channels.Channel
	state atomic.Int32 // a runState
}

type runState = int32

const (
	notStarted runState = iota
	running
	stopped
	failed
)

func (t *trackedChannel) Run(ctx context.Context, h channels.Handler) error {
	t.state.Store(running)
	err := t.Channel.Run(ctx, h)
	if err != nil && ctx.Err() == nil {
		t.state.Store(failed)
	} else {
		t.state.Store(stopped)
	}
	return err
}

// check is the channel's readiness: running, and connected if the adapter can tell.
func (t *trackedChannel) check(context.Context) error {
	switch t.state.Load() {
	case notStarted:
		return errors.New("not started yet")
	case stopped:
		return errors.New("stopped")
	case failed:
		return errors.New("failed; the gateway log says why")
	}
	if r, ok := t.Channel.(readier); ok {
		return r.Ready()
	}
	return nil
}
