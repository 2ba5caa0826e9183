package privatedb

import (
	"errors"
	"fmt"
	"net"
)

// FreePorts returns n TCP ports of 127.0.0.1 that were free a moment ago. All n
// are held open together while they are found, so that they differ.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("privatedb: find a free port: %w", err)
		}
		ls = append(ls, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("privatedb: find a free port: not a TCP address")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
