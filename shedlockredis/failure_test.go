package shedlockredis_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// TestReplicaRefusesLock points a provider at a read-only replica, as a client
// still on a demoted primary after a failover is: the SET fails and TryLock
// returns the server's error, never a lock and never ErrNotAcquired.
func TestReplicaRefusesLock(t *testing.T) {
	t.Parallel()
	primary := startServerFor(t, "")
	host, port, _ := net.SplitHostPort(primary.addr)
	replica := startServerFor(t, "", "--replicaof", host, port)
	c := redis.NewClient(&redis.Options{Addr: replica.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	p := newProvider(t, c)
	l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	assert.Nil(t, l)
	require.Error(t, err)
	assert.NotErrorIs(t, err, shedlock.ErrNotAcquired)
	assert.ErrorContains(t, err, "READONLY")
	assert.ErrorContains(t, err, `shedlock: acquire "job"`)
}

// stallProxy forwards TCP to a server; while stalled, it holds back the
// server's replies, as a hung server or a partitioned network would.
type stallProxy struct {
	l       net.Listener
	target  string
	stalled atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *stallProxy) addr() string { return p.l.Addr().String() }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(up, down); _ = up.Close() }()
		go func() { defer p.wg.Done(); p.replies(down, up); _ = down.Close() }()
	}
}

// replies copies the server's replies, holding each back while stalled. A
// client that gave up closes its side, which ends the copy.
func (p *stallProxy) replies(down, up net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			for p.stalled.Load() {
				time.Sleep(5 * time.Millisecond) // poll interval
			}
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestContextEndsStalledCommands: with the client's ContextTimeoutEnabled, a
// context's deadline ends a command the server never answers. TryLock then
// returns the context's error, Unlock ErrReleaseFailed with it, Extend the
// error, and the lock stays as it was: an Unlock once the server answers
// releases it.
func TestContextEndsStalledCommands(t *testing.T) {
	t.Parallel()
	proxy := newStallProxy(t, serverAddr(t))
	c := redis.NewClient(&redis.Options{Addr: proxy.addr(), ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	direct := newClient(t)
	env := newEnv(t)
	p := newProvider(t, c, shedlockredis.WithEnv(env))
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

	held, err := p.TryLock(ctx, shedlock.LockConfig{Name: "held", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	value := direct.Get(ctx, p.Key("held")).Val()

	proxy.stalled.Store(true)
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	start := time.Now()
	l, err := p.TryLock(short(), cfg)
	assert.Nil(t, l)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, shedlock.ErrNotAcquired)

	err = held.Extend(short(), time.Hour, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.Is(err, shedlock.ErrLockLost), "a failed Extend is not a lost lock")

	err = held.Unlock(short())
	assert.ErrorIs(t, err, shedlock.ErrReleaseFailed)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 30*time.Second, "the deadlines, not ReadTimeout, ended the commands")

	proxy.stalled.Store(false)
	assert.Equal(t, value, direct.Get(ctx, p.Key("held")).Val(), "the lock is still held")
	require.NoError(t, held.Unlock(ctx), "Unlock again once the server answers")
	assert.Zero(t, direct.Exists(ctx, p.Key("held")).Val())
}

// TestCancelledContextSendsNothing: a context already ended stops TryLock
// before the SET.
func TestCancelledContextSendsNothing(t *testing.T) {
	t.Parallel()
	c, log := logged(t, serverAddr(t))
	require.NoError(t, c.Ping(context.Background()).Err())
	log.take()
	p := newProvider(t, c, shedlockredis.WithEnv(newEnv(t)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := p.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	assert.Nil(t, l)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, c.Exists(context.Background(), p.Key("job")).Val())
}
