/* commstime: exported by csp::model.
   Note: values are not recorded: a communication is its channel and direction.
   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan
   A deadlock shows as an invalid end state. */

/* N: the recorded pass count of the loops written against it (N or N + 1 passes). */
#define N 10

chan c0_a = [0] of { byte };
chan c1_b = [0] of { byte };
chan c2_d = [0] of { byte };
chan c3_c = [0] of { byte };
chan done_0_0 = [4] of { bit };

proctype P0_main() {
    run P1_prefix();
    run P2_delta();
    run P3_succ();
    run P4_consumer();
    done_0_0?_;
    done_0_0?_;
    done_0_0?_;
    done_0_0?_;
    skip
}

proctype P1_prefix() {
    int n0;
    n0 = N;
    do
    :: n0 > 0 ->
        c0_a!0;
        c3_c?_;
        n0--
    :: else -> break
    od;
    c0_a!0;
    done_0_0!1;
    skip
}

proctype P2_delta() {
    int n0;
    n0 = N;
    do
    :: n0 > 0 ->
        c0_a?_;
        c1_b!0;
        c2_d!0;
        n0--
    :: else -> break
    od;
    c0_a?_;
    done_0_0!1;
    skip
}

proctype P3_succ() {
    int n0;
    n0 = N;
    do
    :: n0 > 0 ->
        c2_d?_;
        c3_c!0;
        n0--
    :: else -> break
    od;
    done_0_0!1;
    skip
}

proctype P4_consumer() {
    int n0;
    n0 = N;
    do
    :: n0 > 0 ->
        c1_b?_;
        n0--
    :: else -> break
    od;
    done_0_0!1;
    skip
}

init {
    run P0_main();
}
