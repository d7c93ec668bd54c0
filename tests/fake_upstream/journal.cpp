#include "tests/fake_upstream/journal.hpp"

#include <boost/json/parse.hpp>

namespace agw::fake {

long journal::record_request(const std::string& scenario, const std::string& authorization, const std::string& body) {
  boost::system::error_code ec;
  auto parsed = boost::json::parse(body, ec);
  requests_.push_back(boost::json::object{{"scenario", scenario},
                                          {"authorization", authorization},
                                          {"body", ec ? boost::json::value(body) : parsed},
                                          {"at_ns", monotonic_ns()}});
  return attempts_[scenario]++;
}

void journal::record_end(const std::string& scenario, const std::string& kind) {
  ends_.push_back(boost::json::object{{"scenario", scenario}, {"kind", kind}, {"at_ns", monotonic_ns()}});
}

boost::json::object journal::to_json() const { return {{"requests", requests_}, {"ends", ends_}}; }

}  // namespace agw::fake
