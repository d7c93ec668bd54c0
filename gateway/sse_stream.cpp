#include "gateway/sse_stream.hpp"

#include "gateway/sse_stream_impl.ipp"

namespace agw::gateway {

template class basic_sse_stream<net::ip::tcp::socket>;

}  // namespace agw::gateway
