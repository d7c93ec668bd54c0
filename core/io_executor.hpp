#pragma once
// The executor types of the process's io_contexts.
//
// A session's or a connection's strand is its io_context's own executor. Every
// io_context is run by exactly one thread (core/io_pool), so its handlers never run
// at once: the context is what Asio calls an implicit strand. An explicit
// boost::asio::strand<> on top serialised nothing more, and cost each completion that
// comes from the context itself (a timer's, a socket's) an allocated operation queued
// on the strand under its mutex and the strand's invoker to run it (measured:
// docs/streaming.md, "Implicit strands"). Code that runs a context on more than one
// thread must not use these as strands.
//
// What changes with it: a handler dispatched or completed onto a session's or a
// connection's executor from the context's own thread runs at once, where a strand
// with work already queued put it behind that work. Code that needs an order between
// two such handlers posts both (gateway/sse_stream's start() waits for the takes
// delivered before it).
#include <boost/asio/io_context.hpp>

namespace agw::core {

using io_executor = boost::asio::io_context::executor_type;
using io_strand = io_executor;  // an implicit strand: the executor of a context one thread runs

}  // namespace agw::core
