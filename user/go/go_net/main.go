// go_net: the Go runtime's network poller and net package over Concerto's
// loopback TCP and UDP (AF_INET, AF_INET6): listeners, many concurrent
// connections on goroutines, deadlines, an HTTP server and client, UDP
// datagrams, and refused connections.  Output is KTAP, like the C tests;
// each case runs with a time limit.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

var indent = func() string {
	n := 0
	fmt.Sscanf(os.Getenv("UTEST_INDENT"), "%d", &n)
	return strings.Repeat(" ", n)
}()

func out(format string, a ...interface{}) {
	for _, l := range strings.Split(strings.TrimRight(fmt.Sprintf(format, a...), "\n"), "\n") {
		fmt.Print(indent + l + "\n")
	}
}

type testCase struct {
	name string
	fn   func() error
}

// echoServer accepts on l until it is closed, echoing each line.
func echoServer(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			io.Copy(c, c)
		}(c)
	}
}

func tcpEcho() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go echoServer(l)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "hello\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "hello\n" {
		return fmt.Errorf("echo %q", line)
	}
	if c.LocalAddr().(*net.TCPAddr).Port == 0 {
		return errors.New("no local port")
	}
	return nil
}

func manyConnections() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go echoServer(l)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := strings.Repeat(fmt.Sprintf("%d,", i), 2000)
			go fmt.Fprint(c, msg)
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(c, buf); err != nil {
				errs <- err
				return
			}
			if string(buf) != msg {
				errs <- fmt.Errorf("connection %d: data differs", i)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

func readDeadline() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			time.Sleep(2 * time.Second)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start := time.Now()
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return fmt.Errorf("read: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		return fmt.Errorf("the deadline took %v", d)
	}
	return nil
}

func httpServerClient() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s", r.URL.Path)
	})}
	go srv.Serve(l)
	defer srv.Close()
	for i := 0; i < 20; i++ {
		resp, err := http.Get(fmt.Sprintf("http://%s/x%d", l.Addr(), i))
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if string(body) != fmt.Sprintf("path=/x%d", i) {
			return fmt.Errorf("body %q", body)
		}
	}
	return nil
}

func udpExchange() error {
	a, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := a.WriteTo([]byte("datagram"), b.LocalAddr()); err != nil {
		return err
	}
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := b.ReadFrom(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "datagram" || from.String() != a.LocalAddr().String() {
		return fmt.Errorf("got %q from %v, want from %v", buf[:n], from, a.LocalAddr())
	}
	return nil
}

func dualStackListener() error {
	// ":0" is a dual-stack listener where the system has IPv6
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return err
	}
	defer l.Close()
	go echoServer(l)
	port := l.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		c, err := net.Dial("tcp", fmt.Sprintf("%s:%d", host, port))
		if err != nil {
			return err
		}
		fmt.Fprintf(c, "x\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || line != "x\n" {
			return fmt.Errorf("%s: %q %v", host, line, err)
		}
	}
	return nil
}

func refused() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	_, err = net.DialTimeout("tcp", addr, 5*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("dial %s: %v, want ECONNREFUSED", addr, err)
	}
	return nil
}

// interfaces: net.Interfaces and InterfaceAddrs read netlink (RTM_GETLINK,
// RTM_GETADDR).
func interfaces() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	lo := -1
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 && i.Flags&net.FlagUp != 0 {
			lo = i.Index
		}
	}
	if lo < 0 {
		return fmt.Errorf("no loopback among %v", ifs)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.IPv4(127, 0, 0, 1)) {
			return nil
		}
	}
	return fmt.Errorf("no 127.0.0.1 among %v", addrs)
}

func run(tc testCase) (err error) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		done <- tc.fn()
	}()
	select {
	case err = <-done:
		return err
	case <-time.After(60 * time.Second):
		return errors.New("no result after 60 s")
	}
}

func main() {
	tests := []testCase{
		{"tcp_echo", tcpEcho},
		{"many_connections", manyConnections},
		{"read_deadline", readDeadline},
		{"http_server_and_client", httpServerClient},
		{"udp_exchange", udpExchange},
		{"dual_stack_listener", dualStackListener},
		{"refused", refused},
		{"interfaces", interfaces},
	}
	out("KTAP version 1\n1..%d", len(tests))
	failed := 0
	for i, tc := range tests {
		if err := run(tc); err != nil {
			failed++
			out("# %s: %v\nnot ok %d %s", tc.name, err, i+1, tc.name)
		} else {
			out("ok %d %s", i+1, tc.name)
		}
	}
	out("# go_net: %d passed, %d failed, 0 skipped", len(tests)-failed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
