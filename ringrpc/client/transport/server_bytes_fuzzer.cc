// libFuzzer target: arbitrary bytes from "the server" into a client
// connection with one call open. Whatever arrives, the call must end
// exactly once with a status once the server's side closes, without a
// crash, a hang or unbounded allocation (limits: 64 KiB messages, 4 KiB
// metadata). Byte 0 bit 0 chooses whether a valid SETTINGS frame comes
// first (so most inputs get past the preface check).
//
// Build and run: tools/fuzz.sh [seconds] //ringrpc/client/transport:server_bytes_fuzzer.
// The seed corpus (ringrpc/client/transport/fuzz_corpus/) is replayed by
// //ringrpc/client/transport:server_bytes_fuzzer_corpus_test on every run.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ringrpc/client/transport/http2_connection.h"

using namespace ringrpc;  // NOLINT

namespace {

runtime::EventLoop& Loop() {
  static auto* loop = runtime::EventLoop::Create(runtime::Backend::kEpoll)->release();
  return *loop;
}

Task<absl::Status> OneCall(std::shared_ptr<transport::Http2Connection> conn, int* ends) {
  auto call = conn->StartCall({.path = "/fuzz.Service/Method", .metadata = {{"x-fuzz", "1"}}});
  if (!call.ok()) co_return call.status();
  (void)co_await (*call)->Write("request");  // Finish has the status
  (*call)->WritesDone();
  while (co_await (*call)->Read()) {
  }
  absl::Status s = co_await (*call)->Finish();
  ++*ends;
  co_return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  runtime::EventLoop& loop = Loop();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) abort();
  std::string input;
  if (data[0] & 1) input.assign("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);  // SETTINGS
  input.append(reinterpret_cast<const char*>(data + 1), size - 1);

  transport::ConnectionOptions options;
  options.max_receive_message_size = 64 << 10;
  options.max_metadata_size = 4 << 10;
  auto conn = transport::Http2Connection::Adopt(loop, sv[0],
                                                *transport::Address::Parse("unix:/fuzz"), options);
  if (!conn.ok()) abort();
  int ends = 0;
  Task<absl::Status> call = OneCall(*conn, &ends);
  call.handle().resume();

  size_t off = 0;
  bool closed = false;
  for (int turn = 0; !call.done(); ++turn) {
    if (off < input.size()) {
      ssize_t n = ::send(sv[1], input.data() + off, input.size() - off, MSG_NOSIGNAL);
      if (n > 0) off += n;
    } else if (!closed) {
      ::shutdown(sv[1], SHUT_WR);  // the server is done: the call must end
      closed = true;
    }
    // Drain what the client writes so it never blocks.
    char sink[65536];
    while (::recv(sv[1], sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    loop.RunOnce(std::chrono::milliseconds(closed ? 5 : 0));
    if (turn > 100000) {
      std::fprintf(stderr, "call did not end after the server closed\n");
      abort();
    }
  }
  if (ends != 1) abort();
  absl::Status s = call.result();
  if (!s.ok() && s.message().empty()) {
    std::fprintf(stderr, "error status without a message: %s\n", s.ToString().c_str());
    abort();
  }
  call.Reset();
  conn->reset();
  ::close(sv[1]);
  // Let orphaned operations and wake-ups settle.
  for (int i = 0; i < 3; ++i) loop.RunOnce(std::chrono::milliseconds(0));
  return 0;
}
