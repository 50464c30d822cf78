// The OpenMP peer of bench/intranode_allreduce (STAPERS's Table 5.3 method):
// allreduce latency among N threads of one process. Each iteration every
// thread contributes one double to a worksharing loop's `reduction(+)` and
// every thread reads the total after the loop's implicit barrier: one
// barrier per allreduce, as the board of this project's shared-memory
// allreduce. Three totals are used by turns so that none is reset while a
// thread may still read it: iteration k reads total k mod 3 and the master
// resets total (k+1) mod 3 before k's barrier, which nobody reads again
// before iteration k+1 combines into it, after that barrier. Built by the
// script with g++ -fopenmp.
//
//   openmp_allreduce <threads>   prints  RESULT allreduce openmp <threads> 8 <us>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 8;
    constexpr int warmup = 2000, iterations = 20000;
    double t0 = 0, t1 = 0, t2 = 0, seen = 0;
    std::chrono::steady_clock::time_point start;
    double us = 0;
    bool wrong = false;
#pragma omp parallel num_threads(n) shared(t0, t1, t2, seen, start, us, wrong)
    {
        for (int k = 0; k < warmup + iterations; ++k) {
            if (k == warmup) {
#pragma omp barrier
#pragma omp master
                start = std::chrono::steady_clock::now();
            }
            const int b = k % 3, next = (k + 1) % 3;
#pragma omp master
            (next == 0 ? t0 : next == 1 ? t1 : t2) = 0;
            double got;
            if (b == 0) {
#pragma omp for reduction(+ : t0) schedule(static, 1)
                for (int i = 0; i < n; ++i) t0 += 1.0;
                got = t0;
            } else if (b == 1) {
#pragma omp for reduction(+ : t1) schedule(static, 1)
                for (int i = 0; i < n; ++i) t1 += 1.0;
                got = t1;
            } else {
#pragma omp for reduction(+ : t2) schedule(static, 1)
                for (int i = 0; i < n; ++i) t2 += 1.0;
                got = t2;
            }
            if (got != n) {
#pragma omp atomic write
                wrong = true;
            }
#pragma omp master
            seen += got;
        }
#pragma omp master
        us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iterations;
    }
    if (wrong || seen != static_cast<double>(n) * (warmup + iterations)) {
        std::fprintf(stderr, "openmp_allreduce: a thread read a wrong total\n");
        return 1;
    }
    std::printf("RESULT allreduce openmp %d 8 %.3f\n", n, us);
}
