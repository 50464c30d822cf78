#pragma once
// Asynchronous node/port messaging over TCP.
#include "csp/csp.hpp"  // csp::run, par, select: a program needs no other include
#include "net/errors.hpp"
#include "net/loans.hpp"
#include "net/log.hpp"
#include "net/nameserver.hpp"
#include "net/nameserver_client.hpp"
#include "net/node.hpp"
#include "net/port.hpp"
