// protoc-gen-ringrpc: writes X.ringrpc.pb.h / X.ringrpc.pb.cc beside
// protoc's X.pb.h / X.pb.cc, with a stub for every service:
//
//   auto stub = helloworld::Greeter::NewStub(channel);
//   ringrpc::Status s = stub->SayHello(&ctx, request, &reply);          // blocking
//   stub->async()->SayHello(&ctx, &request, &reply, [](ringrpc::Status) {});  // callback
//   ringrpc::Status s = co_await stub->co_SayHello(&ctx, request, &reply);     // coroutine
//
// Unary methods get all three forms; streaming methods (server, client,
// bidi) get the coroutine form, a typed call over ringrpc::ClientCall.
// Errors in the input (a method name that would clash with generated
// names) are reported through protoc, naming the file and the element.
#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/compiler/plugin.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/generator.h"

namespace ringrpc::codegen {
namespace {

using google::protobuf::compiler::CodeGenerator;
using google::protobuf::compiler::GeneratorContext;

// Parameters, comma-separated: "nested_namespace=NAME" puts the stubs in
// <package namespace>::NAME, so a program can also link grpc++'s generated
// code for the same proto (same class names otherwise);
// "generate_mock_code=true" also writes X_mock.ringrpc.pb.h (gMock stubs),
// as grpc_cpp_plugin's option of the same name.
struct Parameters {
  std::string nested;
  bool mocks = false;
};

bool ParseParameters(const std::string& parameter, Parameters* out, std::string* error) {
  std::vector<std::pair<std::string, std::string>> options;
  google::protobuf::compiler::ParseGeneratorParameter(parameter, &options);
  for (const auto& [key, value] : options) {
    if (key == "generate_mock_code" && (value == "true" || value == "false")) {
      out->mocks = value == "true";
      continue;
    }
    if (key != "nested_namespace" || value.empty()) {
      *error = "protoc-gen-ringrpc: unknown parameter \"" + key + (value.empty() ? "" : "=") +
               value + "\" (expected nested_namespace=NAME or generate_mock_code=true)";
      return false;
    }
    out->nested = value;
    // Inside the package namespace, a nested "ringrpc" or "grpc" would be
    // what user code there means by ringrpc:: or grpc::.
    if (value == "ringrpc" || value == "grpc") {
      *error = "protoc-gen-ringrpc: nested_namespace=" + value + " would hide ::" + value +
               " from code in the proto's package namespace; pick another name (e.g. ring)";
      return false;
    }
  }
  return true;
}

// A method may not be named like a name generated for it or another
// method: Foo's CompletionQueue form is AsyncFoo / PrepareAsyncFoo (and
// their Raw methods), a stream's blocking form is over FooRaw.
bool CheckMethodNames(const FileDescriptor* file, std::string* error) {
  static const std::set<std::string> kReserved = {"NewStub", "Stub", "StubInterface", "async",
                                                  "channel"};
  for (int s = 0; s < file->service_count(); ++s) {
    const ServiceDescriptor* svc = file->service(s);
    for (int m = 0; m < svc->method_count(); ++m) {
      const std::string& name = svc->method(m)->name();
      for (int o = 0; o < svc->method_count(); ++o) {
        const std::string& other = svc->method(o)->name();
        for (const std::string& made :
             {"Async" + other, "PrepareAsync" + other, "Async" + other + "Raw",
              "PrepareAsync" + other + "Raw", other + "Raw"}) {
          if (name == made) {
            *error = file->name() + ": method " + svc->full_name() + "." + name +
                     " clashes with a method ringrpc generates for " + svc->full_name() + "." +
                     other;
            return false;
          }
        }
      }
      if (kReserved.count(name) || name.rfind("co_", 0) == 0) {
        *error = file->name() + ": method " + svc->full_name() + "." + name +
                 " clashes with a name ringrpc generates (NewStub, Stub, StubInterface, "
                 "async, channel, co_*)";
        return false;
      }
    }
  }
  return true;
}

class Generator final : public CodeGenerator {
 public:
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }

  bool Generate(const FileDescriptor* file, const std::string& parameter, GeneratorContext* context,
                std::string* error) const override {
    Parameters params;
    if (!ParseParameters(parameter, &params, error) || !CheckMethodNames(file, error)) {
      return false;
    }
    const std::string base = StripProto(file->name());
    auto write = [&](const std::string& name, auto writer) {
      std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(context->Open(name));
      Printer p(out.get(), '$');
      writer(p, file, base, params.nested);
    };
    write(base + ".ringrpc.pb.h", WriteHeader);
    write(base + ".ringrpc.pb.cc", WriteSource);
    if (params.mocks) write(base + "_mock.ringrpc.pb.h", WriteMockHeader);
    return true;
  }
};

}  // namespace
}  // namespace ringrpc::codegen

int main(int argc, char* argv[]) {
  ringrpc::codegen::Generator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
