// tests/testing/dns_server.h — a real DNS server for tests: Debian's
// dnsmasq, started on a free UDP/TCP port of 127.0.0.1, answering for names
// under ".test" from a hosts file the test rewrites (SetHosts reloads it
// with SIGHUP and waits until the server answers with the new records), and
// TXT records fixed at start. Stopped by PID when destroyed. Test-only.
//
//   auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.2"}});
//   std::string target = "dns://" + (*dns)->address() + "/svc.ringrpc.test:50051";
#ifndef RINGRPC_TESTS_TESTING_DNS_SERVER_H_
#define RINGRPC_TESTS_TESTING_DNS_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/daemon.h"
#include "tests/testing/loopback.h"

namespace ringrpc::testing {

inline constexpr const char* kDnsmasq = "/usr/sbin/dnsmasq";

// What one name resolves to: "name" -> "ip" (one line of a hosts file).
using HostRecords = std::vector<std::pair<std::string, std::string>>;

// The A and AAAA answers for `name` from the server at 127.0.0.1:port, as
// address strings; nullopt when there was no answer in time.
inline std::optional<std::set<std::string>> QueryAddresses(int port, const std::string& name) {
  std::set<std::string> got;
  for (uint16_t type : {uint16_t{1}, uint16_t{28}}) {
    std::string q("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
    size_t start = 0;
    while (start <= name.size()) {
      size_t dot = std::min(name.find('.', start), name.size());
      q.push_back(static_cast<char>(dot - start));
      q.append(name, start, dot - start);
      start = dot + 1;
    }
    q.push_back('\0');
    q += std::string{'\0', static_cast<char>(type), '\0', '\1'};
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
    pollfd p{fd, POLLIN, 0};
    unsigned char r[1500];
    ssize_t n = ::poll(&p, 1, 200) == 1 ? ::recv(fd, r, sizeof r, 0) : -1;
    ::close(fd);
    if (n < 12) return std::nullopt;
    size_t at = q.size();  // the question is echoed
    int answers = r[6] << 8 | r[7];
    for (int i = 0; i < answers && at + 12 <= size_t(n); ++i) {
      if ((r[at] & 0xc0) == 0xc0) {
        at += 2;
      } else {
        while (at < size_t(n) && r[at] != 0) at += r[at] + 1;
        ++at;
      }
      uint16_t rtype = r[at] << 8 | r[at + 1];
      uint16_t len = r[at + 8] << 8 | r[at + 9];
      at += 10;
      if (at + len > size_t(n)) break;
      char text[INET6_ADDRSTRLEN] = {};
      if (rtype == 1 && len == 4) ::inet_ntop(AF_INET, r + at, text, sizeof text);
      if (rtype == 28 && len == 16) ::inet_ntop(AF_INET6, r + at, text, sizeof text);
      if (text[0] != '\0') got.insert(text);
      at += len;
    }
  }
  return got;
}

class DnsServer {
 public:
  // `txt`: name -> the record's strings (each at most 255 bytes).
  static absl::StatusOr<std::unique_ptr<DnsServer>> Start(
      HostRecords hosts, std::vector<std::pair<std::string, std::vector<std::string>>> txt = {}) {
    if (::access(kDnsmasq, X_OK) != 0) {
      return absl::FailedPreconditionError(
          "dnsmasq is not installed (tools/install-deps.sh installs dnsmasq-base)");
    }
    std::unique_ptr<DnsServer> s(new DnsServer());
    s->WriteHosts(hosts);
    // TXT records go in a config file: only there does dnsmasq read quoted
    // strings (commas and \" inside).
    const std::string conf = s->daemon_.dir() + "/dnsmasq.conf";
    {
      std::ofstream f(conf);
      for (auto& [name, strings] : txt) {
        f << "txt-record=" << name;
        for (const std::string& t : strings) {
          f << ",\"";
          for (char c : t) {
            if (c == '"' || c == '\\') f << '\\';
            f << c;
          }
          f << '"';
        }
        f << "\n";
      }
    }
    for (int tries = 0; tries < 5; ++tries) {
      int port = UnusedLoopbackPort(SOCK_DGRAM);
      std::vector<std::string> args = {
          kDnsmasq,
          "--no-daemon",
          absl::StrCat("--port=", port),
          "--listen-address=127.0.0.1",
          "--bind-interfaces",
          "--no-resolv",
          "--no-hosts",
          "--addn-hosts=" + s->hosts_path_,
          "--local=/test/",
          "--local-ttl=0",
          "--no-negcache",
          "--pid-file=",
          "--log-queries",
          // --no-daemon (debug mode) also keeps our user and group: as
          // root dnsmasq would take "nobody" and "dip", which a sandbox's
          // user namespace does not allow.
      };
      args.push_back("--conf-file=" + conf);
      if (absl::Status st = s->daemon_.Spawn(std::move(args)); !st.ok()) return st;
      s->port_ = port;
      // Up once it answers (an unknown name under .test: NXDOMAIN).
      for (int i = 0; i < 50; ++i) {
        if (QueryAddresses(port, "ready.ringrpc.test")) return s;
        if (s->daemon_.Exited()) break;  // the port was taken: again
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      s->daemon_.Stop();
    }
    return absl::InternalError("dnsmasq did not start; its log: " + s->daemon_.Log());
  }

  int port() const { return port_; }
  // "127.0.0.1:port": the authority of a dns://server/name target.
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // Replaces every record and waits (at most 5 s) until the server answers
  // `probe` with `probe_answer` (empty: NXDOMAIN / no records).
  bool SetHosts(const HostRecords& hosts, const std::string& probe,
                const std::set<std::string>& probe_answer) {
    WriteHosts(hosts);
    daemon_.Signal(SIGHUP);
    for (int i = 0; i < 100; ++i) {
      auto got = QueryAddresses(port_, probe);
      if (got && *got == probe_answer) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // How many queries for `name` (any type) the server has answered (its log).
  int QueryCount(const std::string& name) const { return daemon_.CountLines("] " + name + " "); }

 private:
  DnsServer() : daemon_("dns"), hosts_path_(daemon_.dir() + "/hosts") {}

  void WriteHosts(const HostRecords& hosts) {
    const std::string tmp = hosts_path_ + ".new";
    {
      std::ofstream f(tmp);
      for (auto& [name, ip] : hosts) f << ip << " " << name << "\n";
    }
    std::rename(tmp.c_str(), hosts_path_.c_str());
  }

  Daemon daemon_;
  std::string hosts_path_;
  int port_ = 0;
};

// A UDP socket on 127.0.0.1 that never answers: a DNS server that times out.
class SilentDnsServer {
 public:
  SilentDnsServer() { fd_ = BindLoopback(SOCK_DGRAM, &port_); }
  ~SilentDnsServer() { ::close(fd_); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_DNS_SERVER_H_
