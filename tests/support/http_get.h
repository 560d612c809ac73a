// A plain HTTP/1.0 GET over a loopback TCP socket, for tests that scrape a metrics endpoint
// without an HTTP client library (tests only).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace fedanon::testing {

// The whole response (status line, headers, body) of GET `path` on 127.0.0.1:`port`; "" when
// the connection fails.
inline std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n = 0;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, n);
    }
  }
  ::close(fd);
  return response;
}

// The value of the sample `series` (name with its labels as exposed, e.g.
// `fedanon_leader_jobs{state="done"}`) in a Prometheus text exposition; -1 when absent.
inline double MetricValue(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      return std::stod(text.substr(pos + series.size() + 1));
    }
    pos += series.size();
  }
  return -1;
}

}  // namespace fedanon::testing
