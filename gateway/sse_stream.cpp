#include "gateway/sse_stream.hpp"

#include "gateway/sse_stream_impl.ipp"

namespace agw::gateway {

template class basic_sse_stream<net::ip::tcp::socket>;
// The server's streams watch for their client's close; should Asio's wait ever stop
// matching, this fails the build instead of turning the watch off unseen.
static_assert(sse_detail::can_watch_peer<net::ip::tcp::socket>);

}  // namespace agw::gateway
