#pragma once
// The whole core in one include.
#include "csp/alt.hpp"
#include "csp/barrier.hpp"
#include "csp/buffer.hpp"
#include "csp/channel.hpp"
#include "csp/deadline_after.hpp"
#include "csp/error.hpp"
#include "csp/guard.hpp"
#include "csp/observer.hpp"
#include "csp/preemption.hpp"
#include "csp/process.hpp"
#include "csp/runtime.hpp"
#include "csp/timer.hpp"
