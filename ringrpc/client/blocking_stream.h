// ringrpc/client/blocking_stream.h — grpc++'s blocking streaming API over ringrpc
// calls: ClientReader, ClientWriter, ClientReaderWriter. Each operation runs
// on the call's CQ thread while the calling thread waits.
//
//   std::unique_ptr<ringrpc::ClientReader<Feature>> reader =
//       stub->ListFeatures(&ctx, rect);
//   Feature f;
//   while (reader->Read(&f)) { ... }
//   ringrpc::Status s = reader->Finish();
//
// Each class implements grpc++'s interface of the same shape
// (ClientReaderInterface, ClientWriterInterface,
// ClientReaderWriterInterface): the generated StubInterface returns those,
// so a test can script a stream (ringrpc/testing/mock_stream.h).
//
// Threading: any thread that is not one of the channel's CQ threads. For a
// bidi stream, one thread may Read while another Writes. On one of the
// channel's CQ threads (inside a callback or reaction) nothing waits: Read
// and Write return false at once and Finish returns FAILED_PRECONDITION
// saying why (waiting there would deadlock the thread the call runs on);
// destroying the object there is fine (the call is cancelled if unfinished).
#ifndef RINGRPC_CLIENT_BLOCKING_STREAM_H_
#define RINGRPC_CLIENT_BLOCKING_STREAM_H_

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "ringrpc/base/task.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

namespace internal {

// grpc++'s stream interfaces (grpcpp/impl/codegen/sync_stream.h), the
// same names, methods and meaning.
class ClientStreamingInterface {
 public:
  virtual ~ClientStreamingInterface() = default;
  // Waits for the call to end and returns its status.
  virtual Status Finish() = 0;
};

template <class R>
class ReaderInterface {
 public:
  virtual ~ReaderInterface() = default;
  // True with an upper bound on the next message's size (the call's
  // receive limit: grpc.max_receive_message_length or the method's, 4 MiB
  // by default, UINT32_MAX when unbounded), as grpc++'s: the message's own
  // size is not known before it is read. False when the call never opened.
  virtual bool NextMessageSize(uint32_t* sz) = 0;
  // Blocks for the next message; false at the end of the stream.
  virtual bool Read(R* msg) = 0;
};

template <class W>
class WriterInterface {
 public:
  virtual ~WriterInterface() = default;
  // Blocks until the message is written; false once the call has ended.
  virtual bool Write(const W& msg, WriteOptions options) = 0;
  bool Write(const W& msg) { return Write(msg, WriteOptions()); }
  // Write and half-close in one.
  void WriteLast(const W& msg, WriteOptions options) { Write(msg, options.set_last_message()); }
};

}  // namespace internal

template <class R>
class ClientReaderInterface : public internal::ClientStreamingInterface,
                              public internal::ReaderInterface<R> {
 public:
  virtual void WaitForInitialMetadata() = 0;
};

template <class W>
class ClientWriterInterface : public internal::ClientStreamingInterface,
                              public internal::WriterInterface<W> {
 public:
  virtual bool WritesDone() = 0;
};

template <class W, class R>
class ClientReaderWriterInterface : public internal::ClientStreamingInterface,
                                    public internal::WriterInterface<W>,
                                    public internal::ReaderInterface<R> {
 public:
  virtual void WaitForInitialMetadata() = 0;
  virtual bool WritesDone() = 0;
};

class BlockingCallBase {
 public:
  // The call is released on its own thread (ClientCall's destructor).
  virtual ~BlockingCallBase() = default;

  // Blocks until the server's initial metadata has arrived (it is then in
  // the ClientContext) or the call has ended, as grpc++'s. Not while
  // another thread is in Read or Finish on this stream.
  void WaitForInitialMetadata() {
    if (!call_ || Refused()) return;
    Run([&]() -> Task<void> { metadata_published_ = co_await call_->ReadInitialMetadata(); });
  }

 protected:
  BlockingCallBase(std::unique_ptr<ClientCall> call, Status open_status)
      : call_(std::move(call)), open_(std::move(open_status)) {}

  bool WriteBytes(std::string message, WriteOptions options = WriteOptions()) {
    if (!call_ || Refused()) return false;
    bool ok = false;
    Run([&]() -> Task<void> {
      ok = (co_await call_->Write(OutgoingMessage(std::move(message)),
                                  !options.get_no_compression()))
               .ok();
      if (ok && options.is_last_message()) (void)co_await call_->AwaitWritesDone();
    });
    return ok;
  }
  bool WritesDoneSync() {
    if (!call_ || Refused()) return false;
    Run([&]() -> Task<void> { (void)co_await call_->AwaitWritesDone(); });
    return true;
  }
  // The next message's bytes (as received: see ByteBuffer); nullopt at the
  // end of the stream.
  std::optional<ByteBuffer> ReadBytes() {
    if (!call_ || Refused()) return std::nullopt;
    std::optional<ByteBuffer> m;
    Run([&]() -> Task<void> {
      m = co_await call_->ReadBuffer();
      // The server's initial metadata is in the context from the first
      // message on, not only after Finish.
      if (!metadata_published_) metadata_published_ = co_await call_->AwaitPublishInitialMetadata();
    });
    return m;
  }
  // ReaderInterface::NextMessageSize: the call's receive limit.
  bool NextMessageBound(uint32_t* sz) {
    if (!call_ || Refused()) return false;
    Run([&]() -> Task<void> {
      *sz = call_->max_receive_message_size();
      co_return;
    });
    return true;
  }
  // False at the end of the stream, or if `out` does not parse (the call is
  // then cancelled and Finish says INTERNAL).
  bool ReadInto(google::protobuf::MessageLite* out) {
    std::optional<ByteBuffer> m = ReadBytes();
    if (!m) return false;
    if (!ParseMessage(*m, out)) {
      bad_message_ = out->GetTypeName();
      Run([&]() -> Task<void> {
        call_->Cancel();
        co_return;
      });
      return false;
    }
    return true;
  }
  Status FinishSync() {
    if (!call_) return open_;
    if (Refused()) return misuse_;
    Status s;
    Run([&]() -> Task<void> { s = co_await call_->Finish(); });
    if (!bad_message_.empty()) {
      return Status(StatusCode::INTERNAL, "a response message does not parse as " + bad_message_);
    }
    return s;
  }

 private:
  // On one of the channel's CQ threads a blocking operation would wait on
  // the thread that must do the work (or stall it): refused, and Finish
  // says so.
  bool Refused() {
    if (!call_->OnChannelThread()) return false;
    misuse_ = Status(StatusCode::FAILED_PRECONDITION,
                     "a blocking stream operation (Read/Write/WritesDone/Finish) on one of the "
                     "channel's CQ threads would deadlock; use a reactor or the coroutine API "
                     "there");
    return true;
  }

  // Runs `make()` on the call's CQ thread and waits for it.
  void Run(std::function<Task<void>()> make) {
    std::promise<void> done;
    call_->Run([](std::function<Task<void>()> make, std::promise<void>* done) -> Task<void> {
      co_await make();
      done->set_value();
    }(std::move(make), &done));
    done.get_future().get();
  }

  std::unique_ptr<ClientCall> call_;
  Status open_;
  Status misuse_;
  std::string bad_message_;
  bool metadata_published_ = false;  // on the call's thread, or while Run waits
};

template <typename Response>
class ClientReader final : public BlockingCallBase, public ClientReaderInterface<Response> {
 public:
  ClientReader(std::unique_ptr<ClientCall> call, Status open_status, const std::string& request)
      : BlockingCallBase(std::move(call), std::move(open_status)) {
    if (WriteBytes(request)) WritesDoneSync();
  }
  bool NextMessageSize(uint32_t* sz) override { return NextMessageBound(sz); }
  bool Read(Response* response) override { return ReadInto(response); }
  void WaitForInitialMetadata() override { BlockingCallBase::WaitForInitialMetadata(); }
  Status Finish() override { return FinishSync(); }
};

template <typename Request>
class ClientWriter final : public BlockingCallBase, public ClientWriterInterface<Request> {
 public:
  ClientWriter(std::unique_ptr<ClientCall> call, Status open_status,
               google::protobuf::MessageLite* response)
      : BlockingCallBase(std::move(call), std::move(open_status)), response_(response) {}
  using ClientWriterInterface<Request>::Write;
  bool Write(const Request& request, WriteOptions options) override {
    return WriteBytes(request.SerializeAsString(), options);
  }
  bool WritesDone() override { return WritesDoneSync(); }
  void WaitForInitialMetadata() { BlockingCallBase::WaitForInitialMetadata(); }
  // Half-closes if needed, reads the single response into the message given
  // at the start, and returns the status.
  Status Finish() override {
    WritesDoneSync();
    bool got = ReadInto(response_);
    Status s = FinishSync();
    if (s.ok() && !got) {
      return Status(StatusCode::INTERNAL,
                    "the server ended a client-streaming call OK without a response message");
    }
    return s;
  }

 private:
  google::protobuf::MessageLite* response_;
};

template <typename Request, typename Response>
class ClientReaderWriter final : public BlockingCallBase,
                                 public ClientReaderWriterInterface<Request, Response> {
 public:
  ClientReaderWriter(std::unique_ptr<ClientCall> call, Status open_status)
      : BlockingCallBase(std::move(call), std::move(open_status)) {}
  using ClientReaderWriterInterface<Request, Response>::Write;
  bool Write(const Request& request, WriteOptions options) override {
    return WriteBytes(request.SerializeAsString(), options);
  }
  bool WritesDone() override { return WritesDoneSync(); }
  bool NextMessageSize(uint32_t* sz) override { return NextMessageBound(sz); }
  bool Read(Response* response) override { return ReadInto(response); }
  void WaitForInitialMetadata() override { BlockingCallBase::WaitForInitialMetadata(); }
  Status Finish() override { return FinishSync(); }
};

// A stream of any kind over serialized messages (GenericStub::Call).
class GenericClientReaderWriter final : public BlockingCallBase {
 public:
  GenericClientReaderWriter(std::unique_ptr<ClientCall> call, Status open_status)
      : BlockingCallBase(std::move(call), std::move(open_status)) {}
  bool Write(const std::string& message, WriteOptions options = WriteOptions()) {
    return WriteBytes(message, options);
  }
  bool WritesDone() { return WritesDoneSync(); }
  bool Read(std::string* message) {
    std::optional<ByteBuffer> m = ReadBytes();
    if (!m) return false;
    *message = std::move(*m).TakeString();
    return true;
  }
  Status Finish() { return FinishSync(); }
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_BLOCKING_STREAM_H_
