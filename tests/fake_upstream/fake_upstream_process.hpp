#pragma once
// For tests and the bench: starts tests/fake_upstream (its path in
// FAKE_UPSTREAM_BINARY) on loopback port 0, reads the ports it prints, and
// stops it by its own PID (GET /_log on port() is its journal). make_test_pki() makes a throwaway CA and a server
// certificate for 127.0.0.1 with the openssl CLI (plus an unrelated CA, for
// the "wrong CA is refused" test). Header-only; everything waits boundedly.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace agw::test {

class fake_upstream_process {
 public:
  explicit fake_upstream_process(std::vector<std::string> args = {}) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    args.insert(args.begin(), FAKE_UPSTREAM_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, FAKE_UPSTREAM_BINARY, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) throw std::runtime_error("cannot start fake_upstream");
    read_ports(out[0], args.size() > 1);
    close(out[0]);
  }
  ~fake_upstream_process() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  fake_upstream_process(const fake_upstream_process&) = delete;
  fake_upstream_process& operator=(const fake_upstream_process&) = delete;

  std::uint16_t port() const { return http_port_; }
  std::uint16_t tls_port() const { return https_port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(http_port_) + "/v1"; }
  std::string tls_base_url() const { return "https://127.0.0.1:" + std::to_string(https_port_) + "/v1"; }

 private:
  void read_ports(int fd, bool want_tls) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (http_port_ == 0 || (want_tls && https_port_ == 0)) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("fake_upstream did not report its ports");
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const auto n = read(fd, buf, sizeof buf);
      if (n <= 0) throw std::runtime_error("fake_upstream exited at start-up");
      text.append(buf, static_cast<std::size_t>(n));
      http_port_ = port_after(text, "http_port=");
      https_port_ = port_after(text, "https_port=");
    }
  }
  static std::uint16_t port_after(const std::string& text, const std::string& key) {
    const auto at = text.find(key);
    const auto end = at == std::string::npos ? at : text.find('\n', at);
    if (end == std::string::npos) return 0;
    return static_cast<std::uint16_t>(std::stoi(text.substr(at + key.size(), end - at - key.size())));
  }

  pid_t pid_ = -1;
  std::uint16_t http_port_ = 0;
  std::uint16_t https_port_ = 0;
};

struct test_pki {
  std::string ca_cert;        // the CA that signed server_cert
  std::string other_ca_cert;  // a CA that signed nothing here
  std::string server_cert;    // for 127.0.0.1 (an IP SAN)
  std::string server_key;
};

// Makes the files under `dir` with the openssl CLI; throws when it fails.
inline test_pki make_test_pki(const std::filesystem::path& dir) {
  const auto d = dir.string();
  const std::string quiet = " >/dev/null 2>&1";
  const std::vector<std::string> steps{
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=fake-ca -keyout " + d + "/ca.key -out " + d + "/ca.pem",
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca -keyout " + d + "/other.key -out " + d + "/other.pem",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + d + "/server.key -out " + d + "/server.csr",
      "openssl x509 -req -in " + d + "/server.csr -CA " + d + "/ca.pem -CAkey " + d +
          "/ca.key -CAcreateserial -days 2 -extfile " + d + "/ext.cnf -out " + d + "/server.pem",
  };
  // The server certificate's extensions: an IP SAN is what a client checks 127.0.0.1 against.
  std::ofstream(dir / "ext.cnf") << "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n";
  for (const auto& s : steps)
    if (std::system((s + quiet).c_str()) != 0) throw std::runtime_error("openssl failed: " + s);
  return {d + "/ca.pem", d + "/other.pem", d + "/server.pem", d + "/server.key"};
}

}  // namespace agw::test
