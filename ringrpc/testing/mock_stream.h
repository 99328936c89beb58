// ringrpc/testing/mock_stream.h — gMock doubles of every stream and
// CompletionQueue reader a generated stub returns, as grpc++'s
// <grpcpp/test/mock_stream.h>: MockClientReader, MockClientWriter,
// MockClientReaderWriter, MockClientAsyncResponseReader, MockClientAsyncReader,
// MockClientAsyncWriter, MockClientAsyncReaderWriter (namespace
// ringrpc::testing). With the Mock<Service>Stub in a proto's
// X_mock.ringrpc.pb.h (ringrpc_cc_library(generate_mocks = True)), a test
// scripts a call without a server:
//
//   auto* reader = new ringrpc::testing::MockClientReader<Feature>();
//   EXPECT_CALL(*reader, Read(_)).WillOnce(DoAll(SetArgPointee<0>(f), Return(true)))
//                                .WillOnce(Return(false));
//   EXPECT_CALL(*reader, Finish()).WillOnce(Return(ringrpc::Status::OK));
//   EXPECT_CALL(stub, ListFeaturesRaw(_, _)).WillOnce(Return(reader));  // the stub owns it
//
// Threading: as gMock's (expectations set before the calls are made).
#ifndef RINGRPC_TESTING_MOCK_STREAM_H_
#define RINGRPC_TESTING_MOCK_STREAM_H_

#include <gmock/gmock.h>

#include <cstdint>

#include "ringrpc/client/async_stream.h"
#include "ringrpc/client/async_unary_call.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/write_options.h"

namespace ringrpc::testing {

template <class R>
class MockClientReader : public ClientReaderInterface<R> {
 public:
  MOCK_METHOD(Status, Finish, (), (override));
  MOCK_METHOD(bool, NextMessageSize, (uint32_t*), (override));
  MOCK_METHOD(bool, Read, (R*), (override));
  MOCK_METHOD(void, WaitForInitialMetadata, (), (override));
};

template <class W>
class MockClientWriter : public ClientWriterInterface<W> {
 public:
  using ClientWriterInterface<W>::Write;  // Write(msg) calls Write(msg, options)
  MOCK_METHOD(bool, Write, (const W&, WriteOptions), (override));
  MOCK_METHOD(bool, WritesDone, (), (override));
  MOCK_METHOD(Status, Finish, (), (override));
};

template <class W, class R>
class MockClientReaderWriter : public ClientReaderWriterInterface<W, R> {
 public:
  using ClientReaderWriterInterface<W, R>::Write;
  MOCK_METHOD(void, WaitForInitialMetadata, (), (override));
  MOCK_METHOD(bool, NextMessageSize, (uint32_t*), (override));
  MOCK_METHOD(bool, Read, (R*), (override));
  MOCK_METHOD(bool, Write, (const W&, WriteOptions), (override));
  MOCK_METHOD(bool, WritesDone, (), (override));
  MOCK_METHOD(Status, Finish, (), (override));
};

template <class R>
class MockClientAsyncResponseReader : public ClientAsyncResponseReaderInterface<R> {
 public:
  MOCK_METHOD(void, StartCall, (), (override));
  MOCK_METHOD(void, ReadInitialMetadata, (void*), (override));
  MOCK_METHOD(void, Finish, (R*, Status*, void*), (override));
};

template <class R>
class MockClientAsyncReader : public ClientAsyncReaderInterface<R> {
 public:
  MOCK_METHOD(void, StartCall, (void*), (override));
  MOCK_METHOD(void, ReadInitialMetadata, (void*), (override));
  MOCK_METHOD(void, Finish, (Status*, void*), (override));
  MOCK_METHOD(void, Read, (R*, void*), (override));
};

template <class W>
class MockClientAsyncWriter : public ClientAsyncWriterInterface<W> {
 public:
  MOCK_METHOD(void, StartCall, (void*), (override));
  MOCK_METHOD(void, ReadInitialMetadata, (void*), (override));
  MOCK_METHOD(void, Finish, (Status*, void*), (override));
  MOCK_METHOD(void, Write, (const W&, void*), (override));
  MOCK_METHOD(void, Write, (const W&, WriteOptions, void*), (override));
  MOCK_METHOD(void, WritesDone, (void*), (override));
};

template <class W, class R>
class MockClientAsyncReaderWriter : public ClientAsyncReaderWriterInterface<W, R> {
 public:
  MOCK_METHOD(void, StartCall, (void*), (override));
  MOCK_METHOD(void, ReadInitialMetadata, (void*), (override));
  MOCK_METHOD(void, Finish, (Status*, void*), (override));
  MOCK_METHOD(void, Write, (const W&, void*), (override));
  MOCK_METHOD(void, Write, (const W&, WriteOptions, void*), (override));
  MOCK_METHOD(void, WritesDone, (void*), (override));
  MOCK_METHOD(void, Read, (R*, void*), (override));
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTING_MOCK_STREAM_H_
