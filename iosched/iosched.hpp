#pragma once
// Everything of the IO scheduler: include this.
#include "csp/csp.hpp"  // csp::run, par, select: a program needs no other include
#include "iosched/io_error.hpp"
#include "iosched/protocol.hpp"
#include "iosched/scheduler.hpp"
#include "iosched/wait.hpp"
#include "iosched/watch.hpp"
