package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
)

// echoServer answers each line with the same line and records what it got.
type echoServer struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  []string
	done chan struct{}
}

func startEcho(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, done: make(chan struct{})}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				go func() { <-s.done; c.Close() }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.mu.Lock()
					s.got = append(s.got, line)
					s.mu.Unlock()
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { close(s.done); ln.Close(); s.wg.Wait() })
	return s
}

func (s *echoServer) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func setup(t *testing.T) (*echoServer, *faultproxy.Proxy) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	s := startEcho(t)
	p, err := faultproxy.Start(s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, p
}

func dial(t *testing.T, p *faultproxy.Proxy) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

func roundTrip(c net.Conn, r *bufio.Reader, msg string) (string, error) {
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestForwards(t *testing.T) {
	_, p := setup(t)
	c, r := dial(t, p)
	p.SetLatency(20 * time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(c, r, "ping"); err != nil || got != "ping\n" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("round trip took %v, under the 20ms latency", d)
	}
}

func TestRequestLost(t *testing.T) {
	s, p := setup(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "warm"); err != nil {
		t.Fatal(err)
	}
	fired := p.ResetOnNextRequest(false)
	if _, err := roundTrip(c, r, "lost"); err == nil {
		t.Fatal("want the connection reset")
	}
	<-fired
	if n := s.received(); n != 1 {
		t.Fatalf("server got %d lines, want only the warm-up: the request must be lost", n)
	}
}

func TestResponseLost(t *testing.T) {
	s, p := setup(t)
	c, r := dial(t, p)
	fired := p.ResetOnNextRequest(true)
	if _, err := roundTrip(c, r, "run"); err == nil {
		t.Fatal("want the connection reset before the response")
	}
	<-fired
	if n := s.received(); n != 1 {
		t.Fatalf("server got %d lines, want the request delivered", n)
	}
}

func TestDown(t *testing.T) {
	_, p := setup(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "warm"); err != nil { // the link is up before the outage
		t.Fatal(err)
	}
	p.SetDown(true)
	if _, err := roundTrip(c, r, "x"); err == nil {
		t.Fatal("open connection: want it reset when the database goes down")
	}
	// A new connection while down is reset: at the dial itself, or at its first
	// request, depending on whether the reset lands before the handshake completes.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() { c2.Close() })
		_ = c2.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := roundTrip(c2, bufio.NewReader(c2), "x"); err == nil {
			t.Fatal("new connection while down: want it reset")
		}
	}
	p.SetDown(false)
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "back"); err != nil || got != "back\n" {
		t.Fatalf("after the outage: %q, %v", got, err)
	}
	if st := p.Stats(); st.Refused != 1 || st.Resets < 1 {
		t.Errorf("stats %+v: want 1 refused and the open connection reset", st)
	}
}

func TestDisarm(t *testing.T) {
	s, p := setup(t)
	c, r := dial(t, p)
	p.ResetOnNextRequest(false)
	if !p.Disarm() {
		t.Fatal("Disarm found no armed fault")
	}
	if got, err := roundTrip(c, r, "after"); err != nil || got != "after\n" {
		t.Fatalf("round trip after Disarm: %q, %v", got, err)
	}
	if n := s.received(); n != 1 {
		t.Fatalf("server got %d lines, want 1", n)
	}
	if p.Disarm() {
		t.Error("Disarm found a fault armed twice")
	}
}

// silent reports whether c stays open and answers nothing within d: a read
// times out rather than seeing data, a reset or an end.
func silent(t *testing.T, c net.Conn, r *bufio.Reader, d time.Duration) {
	t.Helper()
	if _, err := io.WriteString(c, "into the hole\n"); err != nil {
		t.Fatalf("write to a blackholed connection: %v, want it to succeed", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := r.ReadString('\n')
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read from a blackholed connection: %q, %v; want a timeout", line, err)
	}
}

func TestBlackholeOpen(t *testing.T) {
	s, p := setup(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "warm"); err != nil {
		t.Fatal(err)
	}
	if n := p.BlackholeOpen(); n != 1 {
		t.Fatalf("BlackholeOpen silenced %d connections, want 1", n)
	}
	silent(t, c, r, 200*time.Millisecond)
	if n := s.received(); n != 1 {
		t.Fatalf("server got %d lines, want only the warm-up", n)
	}
	// The database still answers a new connection.
	c2, r2 := dial(t, p)
	if got, err := roundTrip(c2, r2, "fresh"); err != nil || got != "fresh\n" {
		t.Fatalf("new connection after BlackholeOpen: %q, %v", got, err)
	}
	if st := p.Stats(); st.Blackholed != 1 || st.Swallowed != 1 || st.Resets != 0 {
		t.Errorf("stats %+v: want 1 blackholed, 1 chunk swallowed, no reset", st)
	}
}

func TestSetBlackhole(t *testing.T) {
	s, p := setup(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "warm"); err != nil {
		t.Fatal(err)
	}
	p.SetBlackhole(true)
	silent(t, c, r, 200*time.Millisecond)
	c2, r2 := dial(t, p) // accepted, as a host behind a firewall would not be known dead
	silent(t, c2, r2, 200*time.Millisecond)
	if n := s.received(); n != 1 {
		t.Fatalf("server got %d lines, want only the warm-up", n)
	}
	p.SetBlackhole(false)
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "back"); err != nil || got != "back\n" {
		t.Fatalf("after the blackhole: %q, %v", got, err)
	}
	silent(t, c, r, 50*time.Millisecond) // what was silenced stays silent
	if st := p.Stats(); st.Blackholed != 2 || st.Resets != 0 {
		t.Errorf("stats %+v: want 2 blackholed, no reset", st)
	}
}
