// tests/testing/server_fixture.h — a gtest fixture with one grpc++ test
// server (tests/server/test_server) started for each test. Test-only.
//
//   class RetryTest : public ringrpc::testing::ServerTest {};
//   TEST_F(RetryTest, X) { CreateChannel(server_->address(), ...); }
#ifndef RINGRPC_TESTS_TESTING_SERVER_FIXTURE_H_
#define RINGRPC_TESTS_TESTING_SERVER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>

#include "tests/testing/server_process.h"

namespace ringrpc::testing {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_SERVER_FIXTURE_H_
