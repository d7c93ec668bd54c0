#pragma once
// The executor types of the process's io_context. Session strands are made from
// the io_context's own executor: a strand of the type-erased any_io_executor does
// not fit any_io_executor's small buffer, so every copy of it (each post, each
// bound handler) would share a heap block.
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace agw::core {

using io_executor = boost::asio::io_context::executor_type;
using io_strand = boost::asio::strand<io_executor>;

}  // namespace agw::core
