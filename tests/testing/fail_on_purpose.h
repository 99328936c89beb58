// tests/testing/fail_on_purpose.h — asks tests/server/test_server to fail
// a call's first attempts on purpose, for the retry and hedging tests
// (gRFC A6). Test-only.
//
//   ClientContext ctx;
//   Status s = testing::EchoFailingFirst(*channel, &ctx, {.key = "k1", .attempts = 2});
#ifndef RINGRPC_TESTS_TESTING_FAIL_ON_PURPOSE_H_
#define RINGRPC_TESTS_TESTING_FAIL_ON_PURPOSE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"

namespace ringrpc::testing {

// The server fails the first `attempts` calls that carry `key` with
// `code`, sending `pushback_ms` as grpc-retry-pushback-ms if set; later
// calls with the key are answered (their initial metadata says which
// attempt of the key they were: x-attempt, x-previous-attempts).
struct FailFirst {
  std::string key;
  int attempts = 1;
  int code = 14;  // UNAVAILABLE
  std::string pushback_ms;
};

inline void AddFailFirst(ClientContext* ctx, const FailFirst& f) {
  ctx->AddMetadata("x-call-key", f.key);
  ctx->AddMetadata("x-fail-attempts", std::to_string(f.attempts));
  ctx->AddMetadata("x-fail-code", std::to_string(f.code));
  if (!f.pushback_ms.empty()) ctx->AddMetadata("x-pushback-ms", f.pushback_ms);
}

// One unary echo of "p" (the server sleeping `sleep_ms` first) whose first
// attempts fail as `f` says. An OK answer must echo the payload.
inline Status EchoFailingFirst(Channel& ch, ClientContext* ctx, const FailFirst& f,
                               int sleep_ms = 0) {
  AddFailFirst(ctx, f);
  test::EchoRequest req;
  req.set_payload("p");
  req.set_sleep_ms(sleep_ms);
  test::EchoResponse resp;
  Status s = test::ring::TestService::NewStub(std::shared_ptr<Channel>(&ch, [](Channel*) {
             }))->Unary(ctx, req, &resp);
  if (s.ok()) {
    EXPECT_EQ(resp.payload(), "p");
  }
  return s;
}

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_FAIL_ON_PURPOSE_H_
