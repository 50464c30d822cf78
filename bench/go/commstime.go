// Commstime in Go, the peer of bench/csp_bench's commstime rows: Prefix(0)
// -> Delta -> Succ -> Prefix, Delta writing first to the consumer, then to
// Succ, all on unbuffered channels. Prints one JSON object:
//
//	{"gomaxprocs": N, "ns_per_comm": x}
//
// Run with GOMAXPROCS set by the caller (bench/runtime_vs_go).
package main

import (
	"encoding/json"
	"flag"
	"os"
	"runtime"
	"time"
)

func main() {
	loops := flag.Int("loops", 2000000, "cycles of four communications")
	flag.Parse()
	a, b, c, d := make(chan int64), make(chan int64), make(chan int64), make(chan int64)
	go func() { // prefix
		a <- 0
		for {
			a <- <-c
		}
	}()
	go func() { // delta
		for {
			v := <-a
			d <- v
			b <- v
		}
	}()
	go func() { // succ
		for {
			c <- (<-b) + 1
		}
	}()
	for i := 0; i < 10000; i++ { // warm-up
		<-d
	}
	start := time.Now()
	for i := 0; i < *loops; i++ {
		<-d
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(*loops*4)
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"gomaxprocs": runtime.GOMAXPROCS(0), "ns_per_comm": ns})
}
