// go_threads: a real language runtime as a client of Concerto's threads
// (S1, P3).  A static Go program (CGO_ENABLED=0) exercises what the Go
// runtime needs from the kernel: clone threads with CLONE_SETTLS, futex,
// sigaltstack and SA_ONSTACK handlers, tgkill(SIGURG) preemption,
// sched_getaffinity, mmap/madvise, and, for timers and pipes, epoll.
// Output is KTAP, like the C tests; each case runs with a time limit.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// out prints one line, indented by $UTEST_INDENT spaces (tinit nests the
// programs' KTAP that way, as user/lib/utest.c does).
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

func goroutinesEveryCPU() error {
	n := runtime.GOMAXPROCS(0)
	if n != runtime.NumCPU() {
		return fmt.Errorf("GOMAXPROCS %d, NumCPU %d", n, runtime.NumCPU())
	}
	var wg sync.WaitGroup
	sums := make([]uint64, 4*n)
	for i := range sums {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := uint64(0)
			for j := 0; j < 200000; j++ {
				s += uint64(j ^ i)
			}
			sums[i] = s
		}(i)
	}
	wg.Wait()
	for i, s := range sums {
		want := uint64(0)
		for j := 0; j < 200000; j++ {
			want += uint64(j ^ i)
		}
		if s != want {
			return fmt.Errorf("goroutine %d: sum %d, want %d", i, s, want)
		}
	}
	return nil
}

func mutexCounter() error {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20000; j++ {
				mu.Lock()
				total++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 160000 {
		return fmt.Errorf("total %d, want 160000", total)
	}
	return nil
}

func channelPingPong() error {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	v := 0
	for i := 0; i < 20000; i++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	if v != 20000 {
		return fmt.Errorf("value %d, want 20000", v)
	}
	return nil
}

func garbageCollect() error {
	var keep [][]byte
	for i := 0; i < 2000; i++ {
		b := make([]byte, 16<<10)
		b[0] = byte(i)
		if i%100 == 0 {
			keep = append(keep, b)
		}
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.NumGC < 2 {
		return fmt.Errorf("NumGC %d", ms.NumGC)
	}
	for i, b := range keep {
		if b[0] != byte(i*100) {
			return fmt.Errorf("kept buffer %d corrupted", i)
		}
	}
	return nil
}

func preemptTightLoop() error {
	// A goroutine spinning without function calls is preempted by the
	// runtime's SIGURG (tgkill) so that others run, even on one CPU.
	runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(runtime.NumCPU())
	var stop int32
	go func() {
		for atomic.LoadInt32(&stop) == 0 {
		}
	}()
	runtime.Gosched()
	done := make(chan bool)
	go func() { done <- true }()
	<-done
	atomic.StoreInt32(&stop, 1)
	return nil
}

func signalNotify() error {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	defer signal.Stop(c)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		return err
	}
	select {
	case s := <-c:
		if s != syscall.SIGUSR1 {
			return fmt.Errorf("got %v", s)
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no signal")
	}
	return nil
}

func sleepTimers() error {
	t0 := time.Now()
	time.Sleep(20 * time.Millisecond)
	if d := time.Since(t0); d < 20*time.Millisecond {
		return fmt.Errorf("slept %v", d)
	}
	return nil
}

func execSelf() error {
	out, err := exec.Command(os.Args[0], "--child").Output()
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "child ok" {
		return fmt.Errorf("output %q", out)
	}
	return nil
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
	// The watchdog needs no Go timer (they need epoll): a thread sleeps.
	watchdog := make(chan struct{})
	go func() {
		for i := 0; i < 600; i++ {
			select {
			case <-watchdog:
				return
			default:
			}
			ts := syscall.Timespec{Nsec: 100000000}
			syscall.Nanosleep(&ts, nil)
		}
		out("# %s: no result after 60 s\nnot ok - %s", tc.name, tc.name)
		os.Exit(1)
	}()
	err = <-done
	close(watchdog)
	return err
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--child" {
		fmt.Println("child ok")
		return
	}
	tests := []testCase{
		{"goroutines_on_every_cpu", goroutinesEveryCPU},
		{"mutex_counter_exact", mutexCounter},
		{"channel_ping_pong", channelPingPong},
		{"garbage_collection", garbageCollect},
		{"preempt_tight_loop", preemptTightLoop},
		{"signal_notify_sigusr1", signalNotify},
		{"sleep_and_timers", sleepTimers},
		{"exec_self_with_pipes", execSelf},
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
	out("# go_threads: %d passed, %d failed, 0 skipped", len(tests)-failed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
