/* ping: exported by csp::model.
   Note: values are not recorded: a communication is its channel and direction.
   Verify: spin -a FILE && gcc -O2 -DSAFETY -o pan pan.c && ./pan
   A deadlock shows as an invalid end state. */

chan c0_there = [0] of { byte };
chan c1_back = [0] of { byte };
chan done_0_0 = [2] of { bit };

proctype P0_main() {
    run P1_ping();
    run P2_pong();
    done_0_0?_;
    done_0_0?_;
    skip
}

proctype P1_ping() {
    c0_there!0;
    c1_back?_;
    c0_there!0;
    c1_back?_;
    done_0_0!1;
    skip
}

proctype P2_pong() {
    c0_there?_;
    c1_back!0;
    c0_there?_;
    c1_back!0;
    done_0_0!1;
    skip
}

init {
    run P0_main();
}
