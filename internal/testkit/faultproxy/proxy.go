// Package faultproxy is a TCP proxy for tests that puts faults between a client
// and its database: added latency, connections reset at a chosen moment, a
// database that cannot be reached, and connections that go silent (a
// blackhole). Every goroutine it starts ends by Close.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections from Addr to an upstream address.
type Proxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup

	mu      sync.Mutex
	links   map[*link]struct{}
	latency time.Duration
	down    bool
	hole    bool // new connections are blackholed
	trap    *trap
	closed  bool
	stats   Stats
}

// Stats counts what the proxy did.
type Stats struct {
	Accepted int // connections accepted
	Resets   int // connections reset by a fault
	Refused  int // connections reset at once because the database was down
	Requests int // chunks read from clients, counted before any latency
	// Blackholed counts the connections silenced by BlackholeOpen or SetBlackhole,
	// Swallowed the chunks they dropped, in either direction.
	Blackholed int
	Swallowed  int
}

// trap resets the connection that sends the next request.
type trap struct {
	forward bool          // let the request reach the server and drop its response
	fired   chan struct{} // closed when the connection was reset
}

type link struct {
	client, server net.Conn             // server is nil for a connection accepted into a blackhole
	blackholed     atomic.Bool          // nothing is forwarded either way, and nothing is closed
	dropResponse   atomic.Pointer[trap] // set: reset instead of relaying the next response
	once           sync.Once
	closed         chan struct{}
}

// Start listens on a free port of 127.0.0.1 and forwards to upstream.
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// SetLatency delays every chunk sent towards the database by d.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// SetDown makes the database unreachable (true): open connections are reset and
// new ones are reset as soon as they are accepted. false makes it reachable again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.ResetAll()
	}
}

// ResetAll resets every open connection, as a network failure would, and
// returns how many there were.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	all := make([]*link, 0, len(p.links))
	for l := range p.links {
		all = append(all, l)
	}
	p.stats.Resets += len(all)
	p.mu.Unlock()
	for _, l := range all {
		l.reset()
	}
	return len(all)
}

// BlackholeOpen silences every open connection, as a peer that died behind a
// firewall would: the connection stays open, what either side sends is dropped,
// and neither side is told (no reset, no close). New connections are forwarded
// as before, so a pool finds the database answering on a fresh connection. A
// blackholed connection never comes back. It returns how many it silenced.
func (p *Proxy) BlackholeOpen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackholeOpenLocked()
}

// SetBlackhole(true) silences every open connection, as BlackholeOpen, and every
// new one: it is accepted, never reaches the database, and hears nothing back,
// as a database host that vanished behind a firewall. SetBlackhole(false) makes
// new connections reach the database again; the silenced ones stay silent.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hole = on
	if on {
		p.blackholeOpenLocked()
	}
}

func (p *Proxy) blackholeOpenLocked() int {
	n := 0
	for l := range p.links {
		if !l.blackholed.Swap(true) {
			n++
		}
	}
	p.stats.Blackholed += n
	return n
}

// swallowed counts a chunk a blackholed connection dropped.
func (p *Proxy) swallowed() {
	p.mu.Lock()
	p.stats.Swallowed++
	p.mu.Unlock()
}

// ResetOnNextRequest arms a fault for the next chunk any client sends. With
// forward false the request is lost: its connection is reset before it reaches
// the server. With forward true the server gets and runs it, and the connection
// is reset when the response comes, which the client never sees. The channel is
// closed once the fault has fired.
func (p *Proxy) ResetOnNextRequest(forward bool) <-chan struct{} {
	tr := &trap{forward: forward, fired: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trap = tr
	return tr.fired
}

// Disarm removes a ResetOnNextRequest fault that has not fired, and reports
// whether there was one. A request that has already taken it is not affected.
func (p *Proxy) Disarm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	armed := p.trap != nil
	p.trap = nil
	return armed
}

// Close stops listening, resets every connection and waits for all of the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.ResetAll()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		down, closed, hole := p.down, p.closed, p.hole
		p.stats.Accepted++
		if down {
			p.stats.Refused++
		}
		p.mu.Unlock()
		if down || closed {
			resetConn(c)
			continue
		}
		if hole {
			p.sink(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			resetConn(c)
			continue
		}
		l := &link{client: c, server: s, closed: make(chan struct{})}
		p.mu.Lock()
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.toServer(l)
		go p.toClient(l)
	}
}

// sink keeps c, accepted into a blackhole, open and drops all it sends.
func (p *Proxy) sink(c net.Conn) {
	l := &link{client: c, closed: make(chan struct{})}
	l.blackholed.Store(true)
	p.mu.Lock()
	p.links[l] = struct{}{}
	p.stats.Blackholed++
	p.mu.Unlock()
	p.wg.Add(1)
	go p.toServer(l)
}

// takeTrap returns the armed fault, disarming it.
func (p *Proxy) takeTrap() *trap {
	p.mu.Lock()
	defer p.mu.Unlock()
	tr := p.trap
	p.trap = nil
	if tr != nil {
		p.stats.Resets++
	}
	return tr
}

func (p *Proxy) toServer(l *link) {
	defer p.wg.Done()
	defer p.drop(l)
	buf := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(buf)
		if n > 0 && l.blackholed.Load() {
			p.swallowed()
			n = 0
		}
		if n > 0 {
			p.mu.Lock()
			p.stats.Requests++
			p.mu.Unlock()
			if !l.delay(p.currentLatency()) {
				return
			}
			if tr := p.takeTrap(); tr != nil {
				if !tr.forward {
					close(tr.fired) // before the reset, which the client may act on at once
					l.reset()
					return
				}
				l.dropResponse.Store(tr)
			}
			if _, werr := l.server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) toClient(l *link) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		if l.blackholed.Load() {
			if n > 0 {
				p.swallowed()
			}
			if err != nil {
				// The server hung up, but a dead peer would never tell the
				// client: the link ends when the client's side does.
				_ = l.server.Close()
				return
			}
			continue
		}
		if n > 0 {
			if tr := l.dropResponse.Swap(nil); tr != nil {
				close(tr.fired)
				l.reset()
				p.drop(l)
				return
			}
			if _, werr := l.client.Write(buf[:n]); werr != nil {
				p.drop(l)
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.reset()
			}
			p.drop(l)
			return
		}
	}
}

func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// drop forgets l and closes both ends; the first direction to end does it.
func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close(false)
}

// delay holds a chunk for d, as a slow network would; false if the link closed.
func (l *link) delay(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.closed:
		return false
	case <-t.C:
		return true
	}
}

func (l *link) reset() { l.close(true) }

func (l *link) close(rst bool) {
	l.once.Do(func() {
		if rst {
			resetConn(l.client)
		} else {
			_ = l.client.Close()
		}
		if l.server != nil {
			_ = l.server.Close()
		}
		close(l.closed)
	})
}

// resetConn closes c with an RST rather than a FIN, as a dropped connection
// looks to the client.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
