/* broadcast4: exported by csp::model.
   Note: values are not recorded: a communication is its channel and direction.
   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan
   A deadlock shows as an invalid end state. */

chan m0_r0_r2_t0_0 = [1] of { byte };
chan m1_r0_r1_t0_0 = [1] of { byte };
chan m2_r2_r3_t0_0 = [1] of { byte };
chan done_0_0 = [4] of { bit };

proctype P0_main() {
    run P1_rank_0();
    run P2_rank_1();
    run P3_rank_2();
    run P4_rank_3();
    done_0_0?_;
    done_0_0?_;
    done_0_0?_;
    done_0_0?_;
    skip
}

proctype P1_rank_0() {
    m0_r0_r2_t0_0!0;
    m1_r0_r1_t0_0!0;
    done_0_0!1;
    skip
}

proctype P2_rank_1() {
    m1_r0_r1_t0_0?_;
    done_0_0!1;
    skip
}

proctype P3_rank_2() {
    m0_r0_r2_t0_0?_;
    m2_r2_r3_t0_0!0;
    done_0_0!1;
    skip
}

proctype P4_rank_3() {
    m2_r2_r3_t0_0?_;
    done_0_0!1;
    skip
}

init {
    run P0_main();
}
