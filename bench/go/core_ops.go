// Go's side of bench/csp_bench's single-operation rows, one per run:
//
//   -bench select -n 2|8   a select over n channels of which only the last
//                          has a sender (one goroutine writing forever): ns
//                          per select, each one communication (select/2,
//                          select/8)
//   -bench buffered        one goroutine sends into a channel of 64 slots
//                          and receives back, so nothing ever waits: ns per
//                          send + receive (buffered/csp)
//   -bench spawn           start one goroutine and wait for it (a
//                          sync.WaitGroup): ns per goroutine (spawn/csp)
//
// Prints one JSON object: {"bench": b, "n": n, "gomaxprocs": N, "ns": x}.
// Run with GOMAXPROCS set by the caller (bench/runtime_vs_go: 1, beside
// csp_bench's rows on one worker thread).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

func selectLast(n, loops int) float64 {
	c := make([]chan int64, n)
	for i := range c {
		c[i] = make(chan int64)
	}
	go func() {
		for i := int64(0); ; i++ {
			c[n-1] <- i
		}
	}()
	var v int64
	one := func() {
		// A select statement's cases are fixed at compile time: one
		// statement per n measured.
		switch n {
		case 2:
			select {
			case v = <-c[0]:
			case v = <-c[1]:
			}
		case 8:
			select {
			case v = <-c[0]:
			case v = <-c[1]:
			case v = <-c[2]:
			case v = <-c[3]:
			case v = <-c[4]:
			case v = <-c[5]:
			case v = <-c[6]:
			case v = <-c[7]:
			}
		}
	}
	for i := 0; i < 10000; i++ { // warm-up
		one()
	}
	start := time.Now()
	for i := 0; i < loops; i++ {
		one()
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(loops)
	if v < 0 {
		fmt.Fprintln(os.Stderr, v)
	}
	return ns
}

func buffered(loops int) float64 {
	c := make(chan int64, 64)
	var sum int64
	start := time.Now()
	for i := 0; i < loops; i++ {
		c <- int64(i)
		sum += <-c
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(loops)
	if sum < 0 {
		fmt.Fprintln(os.Stderr, sum)
	}
	return ns
}

func spawn(loops int) float64 {
	var sink int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < loops; i++ {
		wg.Add(1)
		go func() {
			sink++
			wg.Done()
		}()
		wg.Wait()
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(loops)
	if sink < 0 {
		fmt.Fprintln(os.Stderr, sink)
	}
	return ns
}

func main() {
	bench := flag.String("bench", "select", "select, buffered or spawn")
	n := flag.Int("n", 2, "channels in the select: 2 or 8")
	loops := flag.Int("loops", 2000000, "operations timed")
	flag.Parse()
	var ns float64
	switch *bench {
	case "select":
		if *n != 2 && *n != 8 {
			fmt.Fprintln(os.Stderr, "core_ops: -n must be 2 or 8")
			os.Exit(2)
		}
		ns = selectLast(*n, *loops)
	case "buffered":
		ns = buffered(*loops)
	case "spawn":
		ns = spawn(*loops)
	default:
		fmt.Fprintln(os.Stderr, "core_ops: -bench must be select, buffered or spawn")
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"bench": *bench, "n": *n, "gomaxprocs": runtime.GOMAXPROCS(0), "ns": ns})
}
