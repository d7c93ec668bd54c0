// An https upstream: trusted through the extra CA file, refused with a CA that
// did not sign its certificate.
#include <doctest/doctest.h>

#include "tests/integration/providers_support.hpp"

using namespace agw::test;
using namespace agw::test::providers;

TEST_CASE("providers: an https upstream with a test CA is used; with the wrong CA it is refused") {
  temp_dir dir;
  const auto pki = make_test_pki(dir.path());
  fake_upstream_process fake({"--tls-cert", pki.server_cert, "--tls-key", pki.server_key});
  {
    gateway_process gw(
        openai_env(fake, {{"GATEWAY_OPENAI_BASE_URL", fake.tls_base_url()}, {"GATEWAY_OPENAI_CA_FILE", pki.ca_cert}}));
    auto r = runs::run_message(gw.port(), openai_session(gw.port(), "tokens:n=3"), "over tls");
    INFO("events: " << r->parser.body.substr(0, 2000));
    CHECK(r->parser.tokens() == "tok0 tok1 tok2");
    CHECK(r->parser.count("error") == 0);
  }
  {
    gateway_process gw(
        openai_env(fake, {{"GATEWAY_OPENAI_BASE_URL", fake.tls_base_url()}, {"GATEWAY_OPENAI_CA_FILE", pki.other_ca_cert}}));
    auto r = runs::run_message(gw.port(), openai_session(gw.port(), "tokens:n=3"), "over tls");
    CHECK(error_code_of(*r) == "upstream_unavailable");
    CHECK(r->parser.last("error")->field("message").find("TLS") != std::string::npos);
    CHECK(r->parser.tokens().empty());
  }
  CHECK(upstream_requests(fake).size() == 1);  // the refused handshake never sent a request
}
