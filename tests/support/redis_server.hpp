#pragma once
// A throw-away redis-server (Debian's redis-server) on a free loopback port, in a
// temporary directory, persisting nothing; as root it runs as Debian's `redis` user
// (as scripts/cluster.sh does). Stopped by its own PID; start() again reuses the port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace agw::test {

// A port the kernel picks (bind to 0), free again once this returns.
inline std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("no free loopback port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool loopback_port_open(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class redis_server {
 public:
  redis_server() : port_(free_loopback_port()) {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("agw-redis-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(dir_);
    start();
  }
  ~redis_server() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  void start() {
    if (pid_ > 0) return;
    uid_t uid = 0;
    gid_t gid = 0;
    const bool as_redis = ::geteuid() == 0;
    if (as_redis) {
      const passwd* pw = ::getpwnam("redis");
      if (!pw) throw std::runtime_error("no redis system user (Debian's redis-server creates it)");
      uid = pw->pw_uid;
      gid = pw->pw_gid;
      if (::chown(dir_.c_str(), uid, gid) != 0) throw std::runtime_error("chown " + dir_.string());
    }
    const std::string port = std::to_string(port_);
    const std::string log = (dir_ / "redis.log").string();
    std::vector<std::string> args{"redis-server", "--bind",      "127.0.0.1", "--port",    port,
                                  "--dir",        dir_.string(), "--save",    "",          "--appendonly",
                                  "no",           "--daemonize", "no",        "--logfile", log};
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      if (as_redis && (::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!loopback_port_open(port_)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("redis-server exited at start-up (see " + log + ")");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        stop();
        throw std::runtime_error("redis-server did not listen within 10 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // Kills the server (SIGKILL: as a crash would) and reaps it.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::uint16_t port_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

}  // namespace agw::test
