// ringrpc/client/stub_options.h — grpc::StubOptions, which a generated
// NewStub(channel, options) takes. grpc++ uses its one field to name the
// stub in OpenCensus stats; ringrpc keeps it and reads nothing from it
// (per-call telemetry is Channel::CallMetrics()).
//
//   auto stub = helloworld::Greeter::NewStub(channel, ringrpc::StubOptions("canary"));
#ifndef RINGRPC_CLIENT_STUB_OPTIONS_H_
#define RINGRPC_CLIENT_STUB_OPTIONS_H_

namespace ringrpc {

class StubOptions {
 public:
  StubOptions() = default;
  explicit StubOptions(const char* suffix_for_stats) : suffix_for_stats_(suffix_for_stats) {}
  void set_suffix_for_stats(const char* suffix_for_stats) { suffix_for_stats_ = suffix_for_stats; }
  const char* suffix_for_stats() const { return suffix_for_stats_; }

 private:
  const char* suffix_for_stats_ = nullptr;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_STUB_OPTIONS_H_
