// Debian's nginx in front of the real binary, configured as docs/operations.md says
// (the proxy block below is the one printed there): an SSE run is not buffered (its
// first token arrives through nginx within 50 ms of the direct one) and a resume with
// Last-Event-ID works through it. nginx runs as a child of the test with a generated
// config in a temporary directory, on a free loopback port, in the foreground, with
// its pid, logs and temp files in that directory; it is stopped by its PID.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

std::string nginx_binary() {
  for (const char* path : {"/usr/sbin/nginx", "/usr/bin/nginx"})
    if (::access(path, X_OK) == 0) return path;
  return "";
}

// A port nobody listens on now (bound to 0, then released for nginx to take).
std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The proxy settings docs/operations.md ("Behind nginx") gives, for one upstream.
std::string nginx_config(const std::filesystem::path& dir, std::uint16_t listen, std::uint16_t upstream) {
  const std::string d = dir.string();
  return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + d + "/nginx.pid;\nerror_log " + d +
         "/error.log info;\nevents { worker_connections 512; }\nhttp {\n  access_log " + d + "/access.log;\n" +
         "  client_body_temp_path " + d + "/client_body;\n  proxy_temp_path " + d + "/proxy;\n  fastcgi_temp_path " + d +
         "/fastcgi;\n  uwsgi_temp_path " + d + "/uwsgi;\n  scgi_temp_path " + d + "/scgi;\n" +
         "  upstream agent_gateway {\n    server 127.0.0.1:" + std::to_string(upstream) + ";\n    keepalive 32;\n  }\n" +
         "  server {\n    listen 127.0.0.1:" + std::to_string(listen) + ";\n" +
         "    location / {\n"
         "      proxy_pass http://agent_gateway;\n"
         "      proxy_http_version 1.1;\n"
         "      proxy_set_header Connection \"\";\n"
         "      proxy_set_header Host $host;\n"
         "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
         "      proxy_buffering off;\n"
         "      proxy_cache off;\n"
         "      proxy_request_buffering off;\n"
         "      proxy_read_timeout 1h;\n"
         "      proxy_send_timeout 1h;\n"
         "    }\n  }\n}\n";
}

// nginx as a child process, stopped by its PID.
class nginx_process {
 public:
  nginx_process(std::uint16_t upstream) : port_(free_port()) {
    const auto binary = nginx_binary();
    REQUIRE_MESSAGE(!binary.empty(), "nginx is not installed (scripts/setup.sh installs it)");
    const auto conf = dir_.path() / "nginx.conf";
    std::ofstream(conf) << nginx_config(dir_.path(), port_, upstream);
    const auto log = (dir_.path() / "stderr.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      // -e: the start-up error log in the temp dir too, never /var/log/nginx.
      execl(binary.c_str(), binary.c_str(), "-p", dir_.path().c_str(), "-c", conf.c_str(), "-e",
            (dir_.path() / "error.log").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const bool up = eventually(
        [&] {
          try {
            return http_call(port_, "GET", "/healthz", {}, {}).status == 200;
          } catch (const std::exception&) {
            return false;
          }
        },
        10s);
    REQUIRE_MESSAGE(up, "nginx did not come up: " << read(dir_.path() / "error.log") << read(log));
  }
  ~nginx_process() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::uint16_t port() const { return port_; }

 private:
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  temp_dir dir_;
  std::uint16_t port_;
  pid_t pid_ = -1;
};

// Milliseconds from sending a run's POST to its first token frame, through `port`.
double first_token_ms(std::uint16_t port, const std::string& sid, std::unique_ptr<sse_reader>& reader) {
  const auto t0 = clock_type::now();
  reader = start_message(port, sid, "hello");
  REQUIRE(reader->head.status == 200);
  REQUIRE(reader->read_until([](const sse_parser& p) { return p.count("token") >= 1; }, 10s));
  for (const auto& f : reader->parser.frames)
    if (f.event == "token") return std::chrono::duration<double, std::milli>(f.received - t0).count();
  return 1e9;
}

}  // namespace

TEST_CASE("nginx: an SSE run through nginx is not buffered: its first token within 50 ms of the direct one") {
  gateway_process gw;
  nginx_process nginx(gw.port());
  // 2 s of tokens: a buffering proxy would hold the first until the run ends (or 4 KiB).
  const std::string mock = R"({"tokens":10,"tokens_per_second":5,"think_ms":100})";
  std::vector<double> direct, proxied;
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<sse_reader> a, b;
    direct.push_back(first_token_ms(gw.port(), create_mock_session(gw.port(), mock), a));
    proxied.push_back(first_token_ms(nginx.port(), create_mock_session(gw.port(), mock), b));
    REQUIRE(b->read_to_end(10s));
    check_run_stream(*b, b->head.header("X-Run-Id"));
    CHECK(b->parser.count("token") == 10);
  }
  std::sort(direct.begin(), direct.end());
  std::sort(proxied.begin(), proxied.end());
  MESSAGE("first token: direct median " << direct[1] << " ms, through nginx median " << proxied[1] << " ms");
  CHECK(proxied[1] - direct[1] < 50);
  CHECK(proxied[1] < 1000);  // well before the run's end at ~2 s
}

TEST_CASE("nginx: a run cut mid-stream resumes through nginx with Last-Event-ID") {
  gateway_process gw;
  nginx_process nginx(gw.port());
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":20,"tokens_per_second":20})");
  auto first = start_message(nginx.port(), sid, "resume me");
  REQUIRE(first->head.status == 200);
  const std::string run_id = first->head.header("X-Run-Id");
  REQUIRE(first->read_until([](const sse_parser& p) { return p.count("token") >= 3; }, 10s));
  const auto last = first->parser.last_id();
  first->disconnect();

  auto resumed = start_message(nginx.port(), sid, "resume me", {{"Last-Event-ID", std::to_string(last)}});
  REQUIRE(resumed->head.status == 200);
  REQUIRE(resumed->read_to_end(15s));
  const auto& frames = resumed->parser.frames;
  REQUIRE(frames.size() >= 2);
  CHECK(frames.front().event == "reconnected");
  REQUIRE(frames[1].id.has_value());
  CHECK(*frames[1].id == last + 1);
  CHECK(frames.back().event == "done");
  CHECK(frames.back().field("run_id") == run_id);
  // Nothing was lost or repeated across the cut: 20 tokens in all.
  CHECK(first->parser.count("token") + resumed->parser.count("token") == 20);
}
