// Go's side of bench/csp_bench's single-operation rows, one per run:
//
//	-bench select -n 2|8   a select over n channels of which only the last
//	                       has a sender (one goroutine writing forever): ns
//	                       per select, each one communication (select/2,
//	                       select/8)
//	-bench buffered        one goroutine sends into a channel of 64 slots
//	                       and receives back, so nothing ever waits: ns per
//	                       send + receive (buffered/csp)
//	-bench spawn           start one goroutine and wait for it (a
//	                       sync.WaitGroup): ns per goroutine (spawn/csp)
//	-bench latency -n B    B goroutines compute in 5 us slices and call
//	                       runtime.Gosched between them; the first sends a
//	                       timestamp every fourth slice to a goroutine that
//	                       waits for it: ns from the send to the receiver
//	                       running, the mean and the 90th percentile of
//	                       400 samples, or -loops (priority_latency/idle
//	                       with B=1, busy_equal with B=100)
//	-bench par_after_ring  Commstime's ring runs 500 loops, then two
//	                       goroutines compute about 100 us each and are
//	                       waited for; 200 rounds: the median ns of the
//	                       two, and "branch_ns", one computation alone
//	                       (csp_bench's par_after_ring; run with
//	                       GOMAXPROCS=2)
//	-bench producer_consumer
//	                       a goroutine computes 1,000 items of about 50 us
//	                       each and sends them to one that computes as long
//	                       with each: ns per run (csp_bench's
//	                       producer_consumer; GOMAXPROCS 1 and 2)
//	-bench producer_consumer -us U
//	                       the same pair at U us a stage, 50,000 / U items
//	                       (csp_bench's producer_consumer_grain)
//
// Prints one JSON object: {"bench": b, "n": n, "gomaxprocs": N, "ns": x}
// (latency adds "p90_ns", par_after_ring "branch_ns", producer_consumer
// with -us other than 50 "us_per_item").
// Run with GOMAXPROCS set by the caller (bench/runtime_vs_go: 1, beside
// csp_bench's rows on one worker thread).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
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

// The same arithmetic as csp_bench's compute(): a linear congruential
// step the compiler cannot fold.
func compute(seed, iterations uint64) uint64 {
	x := seed | 1
	for i := uint64(0); i < iterations; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var sink uint64

func iterationsFor(us float64) uint64 {
	const n = 50000000
	start := time.Now()
	sink += compute(1, n)
	return uint64(us * n / (float64(time.Since(start).Nanoseconds()) / 1000))
}

// ring runs Commstime's network (prefix, delta, succ, a consumer) for
// `loops` loops and returns once all four goroutines ended.
func ring(loops int) {
	a, b, c, d := make(chan int64), make(chan int64), make(chan int64), make(chan int64)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // prefix
		defer wg.Done()
		a <- 0
		for i := 1; i < loops; i++ {
			a <- <-c
		}
	}()
	go func() { // delta
		defer wg.Done()
		for i := 0; i < loops; i++ {
			v := <-a
			d <- v
			b <- v
		}
	}()
	go func() { // succ
		defer wg.Done()
		for i := 0; i < loops; i++ {
			v := <-b
			if i+1 < loops {
				c <- v + 1
			}
		}
	}()
	for i := 0; i < loops; i++ {
		sink += uint64(<-d)
	}
	wg.Wait()
}

// parAfterRing returns the median ns of two ~100 us computations run in
// parallel right after a ring, over `rounds`, and one computation's alone.
func parAfterRing(rounds int) (float64, float64) {
	iters := iterationsFor(100)
	median := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	alone := make([]float64, 20)
	for i := range alone {
		start := time.Now()
		sink += compute(uint64(i), iters)
		alone[i] = float64(time.Since(start).Nanoseconds())
	}
	pars := make([]float64, rounds)
	for r := range pars {
		ring(500)
		start := time.Now()
		var x, y uint64
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { x = compute(uint64(r), iters); wg.Done() }()
		go func() { y = compute(uint64(r+1), iters); wg.Done() }()
		wg.Wait()
		pars[r] = float64(time.Since(start).Nanoseconds())
		sink += x + y
	}
	return median(pars), median(alone)
}

// producerConsumer returns the ns of one run of 1,000 items.
func producerConsumer(us float64, items int) float64 {
	iters := iterationsFor(us)
	link := make(chan uint64)
	done := make(chan uint64)
	start := time.Now()
	go func() {
		for j := uint64(0); j < uint64(items); j++ {
			link <- compute(j, iters)
		}
	}()
	go func() {
		var s uint64
		for j := 0; j < items; j++ {
			s += compute(<-link, iters)
		}
		done <- s
	}()
	sink += <-done
	return float64(time.Since(start).Nanoseconds())
}

// latency returns the mean and the 90th percentile, in ns, of `samples`
// waits from a send to its receiver running, while `busy` goroutines
// compute in 5 us slices.
func latency(busy, samples int) (float64, float64) {
	slice := iterationsFor(5)
	stamps := make(chan time.Time)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for k := 0; k < busy; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			var local uint64
			for round := uint64(0); !stop.Load(); round++ {
				local += compute(round, slice)
				if k == 0 && round%4 == 0 && !stop.Load() {
					stamps <- time.Now()
				}
				runtime.Gosched()
			}
			atomic.AddUint64(&sink, local)
		}(k)
	}
	waits := make([]float64, samples)
	for i := range waits {
		waits[i] = float64(time.Since(<-stamps).Nanoseconds())
	}
	stop.Store(true)
	// The sender may be blocked in one more send.
	select {
	case <-stamps:
	case <-time.After(100 * time.Millisecond):
	}
	wg.Wait()
	total := 0.0
	for _, w := range waits {
		total += w
	}
	sort.Float64s(waits)
	return total / float64(samples), waits[samples*9/10]
}

func main() {
	bench := flag.String("bench", "select", "select, buffered, spawn, latency, par_after_ring or producer_consumer")
	n := flag.Int("n", 2, "channels in the select: 2 or 8")
	loops := flag.Int("loops", 2000000, "operations timed")
	us := flag.Float64("us", 50, "producer_consumer: microseconds of arithmetic per item and stage")
	flag.Parse()
	var ns, p90, perItem float64
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
	case "latency":
		if *n < 1 {
			fmt.Fprintln(os.Stderr, "core_ops: -n (busy goroutines) must be at least 1")
			os.Exit(2)
		}
		samples := 400 // csp_bench's; -loops overrides
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "loops" {
				samples = *loops
			}
		})
		ns, p90 = latency(*n, samples)
	case "par_after_ring":
		ns, p90 = parAfterRing(200)
	case "producer_consumer":
		if *us <= 0 {
			fmt.Fprintln(os.Stderr, "core_ops: -us (arithmetic per item and stage) must be positive")
			os.Exit(2)
		}
		items := 1000 // csp_bench's producer_consumer at 50 us
		if *us != 50 {
			items = int(50000 / *us) // and its producer_consumer_grain
		}
		ns = producerConsumer(*us, items)
		if *us != 50 {
			perItem = ns / float64(items) / 1000
		}
	default:
		fmt.Fprintln(os.Stderr, "core_ops: -bench must be select, buffered, spawn, latency, par_after_ring or producer_consumer")
		os.Exit(2)
	}
	out := map[string]interface{}{"bench": *bench, "n": *n, "gomaxprocs": runtime.GOMAXPROCS(0), "ns": ns}
	if *bench == "latency" {
		out["p90_ns"] = p90
	}
	if *bench == "par_after_ring" {
		out["branch_ns"] = p90
	}
	if perItem > 0 {
		out["us_per_item"] = perItem
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
