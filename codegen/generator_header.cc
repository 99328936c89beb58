// X.ringrpc.pb.h: for every service, its StubInterface (what a test double
// implements), its Stub (blocking, coroutine, callback and CompletionQueue
// forms) and NewStub, as grpc++'s generated header has them.
#include "codegen/generator.h"

namespace ringrpc::codegen {
namespace {

// A blocking stream's Foo returning `type` (the interface's, or the
// stub's concrete class) over its Raw method.
void PrintRawEntryPoint(Printer& p, Vars v, const std::string& type) {
  v["type"] = type;
  p.Print(v,
          "$dep$std::unique_ptr<$type$> $name$($params$) {\n"
          "  return std::unique_ptr<$type$>($name$Raw($bargs$));\n}\n");
}

// The callback form's declarations of one method; `tail` is " = 0" (the
// interface) or " override" (the stub's).
void PrintCallbackDecls(Printer& p, const MethodDescriptor* md, const std::string& tail) {
  Vars v = MethodVars(md);
  v["tail"] = tail;
  v["virt"] = tail == " = 0" ? "virtual " : "";
  if (Streaming(md)) {
    p.Print(v,
            "// Binds `reactor` to a new call; start it with reactor->StartCall().\n"
            "$virt$void $name$($cb_params$)$tail$;\n");
    return;
  }
  p.Print(v,
          "// `done` runs once, on a CQ thread; request and response must outlive it.\n"
          "$virt$void $name$(::ringrpc::ClientContext* context, const $req$* request, "
          "$resp$* response, std::function<void(::ringrpc::Status)> done)$tail$;\n"
          "// Binds `reactor` (OnReadInitialMetadataDone, OnDone) to a new call;\n"
          "// start it with reactor->StartCall(). The response must outlive OnDone.\n"
          "$virt$void $name$(::ringrpc::ClientContext* context, const $req$* request, "
          "$resp$* response, ::ringrpc::ClientUnaryReactor* reactor)$tail$;\n");
}

// AsyncFoo and PrepareAsyncFoo returning `type` (the interface's, or the
// stub's concrete one) over their Raw methods.
void PrintAsyncEntryPoints(Printer& p, Vars v, const std::string& type) {
  v["type"] = type;
  p.Print(v,
          "$dep$std::unique_ptr<$type$> $async_name$($aparams$$tag_param$) {\n"
          "  return std::unique_ptr<$type$>($async_name$Raw($aargs$$tag_arg$));\n}\n"
          "$dep$std::unique_ptr<$type$> $prep_name$($aparams$) {\n"
          "  return std::unique_ptr<$type$>($prep_name$Raw($aargs$));\n}\n");
}

// StubInterface, as grpc++'s: what a test double implements (the generated
// Mock<Service>Stub does). Streams and the CompletionQueue form come
// through private virtual FooRaw methods; the callback form through
// async().
void PrintStubInterface(Printer& p, const ServiceDescriptor* svc) {
  p.Print("class StubInterface {\n public:\n  virtual ~StubInterface() = default;\n");
  p.Indent();
  for (int m = 0; m < svc->method_count(); ++m) {
    const MethodDescriptor* md = svc->method(m);
    Vars v = MethodVars(md);
    if (Streaming(md)) {
      PrintRawEntryPoint(p, v, v["biface"]);
      continue;
    }
    p.Print(v,
            "virtual ::ringrpc::Status $name$(::ringrpc::ClientContext* context, "
            "const $req$& request, $resp$* response) = 0;\n");
  }
  p.Print("// The CompletionQueue form.\n");
  for (int m = 0; m < svc->method_count(); ++m) {
    Vars v = MethodVars(svc->method(m));
    PrintAsyncEntryPoints(p, v, v["aiface"]);
  }
  p.Print("// The callback form.\nclass async_interface {\n public:\n");
  p.Print("  virtual ~async_interface() = default;\n");
  p.Indent();
  for (int m = 0; m < svc->method_count(); ++m) PrintCallbackDecls(p, svc->method(m), " = 0");
  p.Outdent();
  p.Print("};\n");
  p.Print("virtual async_interface* async() { return nullptr; }\n");
  p.Outdent();
  p.Print(" private:\n");
  p.Indent();
  for (int m = 0; m < svc->method_count(); ++m) {
    const MethodDescriptor* md = svc->method(m);
    if (Streaming(md)) {
      p.Print(MethodVars(md), "virtual $biface$* $name$Raw($params$) = 0;\n");
    }
    p.Print(MethodVars(md),
            "virtual $aiface$* $async_name$Raw($aparams$$tag_param$) = 0;\n"
            "virtual $aiface$* $prep_name$Raw($aparams$) = 0;\n");
  }
  p.Outdent();
  p.Print("};\n\n");
}

// The Stub's public blocking and coroutine forms of one method.
void PrintStubMethod(Printer& p, const MethodDescriptor* md) {
  google::protobuf::SourceLocation loc;
  if (md->GetSourceLocation(&loc)) Comments(p, loc);
  Vars v = MethodVars(md);
  if (!Streaming(md)) {
    p.Print(v,
            "// Blocking (not on one of the channel's CQ threads).\n"
            "$dep$::ringrpc::Status $name$(::ringrpc::ClientContext* context, "
            "const $req$& request, $resp$* response) override;\n"
            "// Coroutine (on one of the channel's CQ threads).\n"
            "$dep$::ringrpc::Task<::ringrpc::Status> $co_name$(::ringrpc::ClientContext* "
            "context, const $req$& request, $resp$* response);\n\n");
    return;
  }
  p.Print("// Streaming, blocking form (not on one of the channel's CQ threads).\n");
  PrintRawEntryPoint(p, v, v["bcls"]);
  p.Print(v,
          "// Streaming, coroutine form (on one of the channel's CQ threads):\n"
          "// nullptr and *status on failure to start.\n"
          "$dep$::ringrpc::Task<std::unique_ptr<::ringrpc::TypedCall<$req$, $resp$>>> "
          "$co_name$(::ringrpc::ClientContext* context, ::ringrpc::Status* status);\n\n");
  if (!md->client_streaming()) {
    p.Print(v,
            "// The same with the request written and the call half-closed, as\n"
            "// the blocking form takes it: then only Read and Finish.\n"
            "$dep$::ringrpc::Task<std::unique_ptr<::ringrpc::TypedCall<$req$, $resp$>>> "
            "$co_name$(::ringrpc::ClientContext* context, const $req$& request, "
            "::ringrpc::Status* status);\n\n");
  }
}

// The Stub's private part: its channel, its async() object and the Raw
// methods behind the stream and CompletionQueue entry points.
void PrintStubPrivate(Printer& p, const ServiceDescriptor* svc) {
  p.Print(
      "\n private:\n  std::shared_ptr<::ringrpc::Channel> channel_;\n  class async "
      "async_{this};\n");
  p.Indent();
  for (int m = 0; m < svc->method_count(); ++m) {
    const MethodDescriptor* md = svc->method(m);
    if (Streaming(md)) {
      p.Print(MethodVars(md), "$bcls$* $name$Raw($params$) override;\n");
    }
  }
  for (int m = 0; m < svc->method_count(); ++m) {
    Vars v = MethodVars(svc->method(m));
    std::string args = v["aargs"];
    // Create(channel, path, context, <request|response>, cq, start[, tag])
    v["create"] = "channel_, \"" + v["path"] + "\", " + args;
    p.Print(v,
            "$acls$* $async_name$Raw($aparams$$tag_param$) override {\n"
            "  return $acls$::Create($create$, true$tag_arg$);\n}\n"
            "$acls$* $prep_name$Raw($aparams$) override {\n"
            "  return $acls$::Create($create$, false$no_tag$);\n}\n");
  }
  p.Outdent();
  p.Print("};\n\n");
}

void PrintStub(Printer& p, const ServiceDescriptor* svc) {
  p.Print("class Stub final : public StubInterface {\n public:\n");
  p.Indent();
  p.Print(
      "explicit Stub(std::shared_ptr<::ringrpc::Channel> channel,\n"
      "              const ::ringrpc::StubOptions& = ::ringrpc::StubOptions())\n"
      "    : channel_(std::move(channel)) {}\n\n");
  for (int m = 0; m < svc->method_count(); ++m) PrintStubMethod(p, svc->method(m));
  // Callback forms.
  p.Print("class async final : public StubInterface::async_interface {\n public:\n");
  p.Indent();
  p.Print("explicit async(Stub* stub) : stub_(stub) {}\n");
  for (int m = 0; m < svc->method_count(); ++m) PrintCallbackDecls(p, svc->method(m), " override");
  p.Outdent();
  p.Print(" private:\n  Stub* stub_;\n};\n");
  p.Print("class async* async() override { return &async_; }\n");
  p.Print("const std::shared_ptr<::ringrpc::Channel>& channel() const { return channel_; }\n\n");
  p.Print(
      "// The CompletionQueue form: completions are tags on `cq`; AsyncFoo\n"
      "// starts the call, PrepareAsyncFoo leaves it to StartCall.\n");
  for (int m = 0; m < svc->method_count(); ++m) {
    Vars v = MethodVars(svc->method(m));
    PrintAsyncEntryPoints(p, v, v["acls"]);
  }
  p.Outdent();
  PrintStubPrivate(p, svc);
}

void PrintService(Printer& p, const ServiceDescriptor* svc) {
  google::protobuf::SourceLocation loc;
  if (svc->GetSourceLocation(&loc)) Comments(p, loc);
  if (svc->options().deprecated()) p.Print("// Deprecated.\n");
  p.Print("class $svc$ final {\n public:\n", "svc", CppName(svc->name()));
  p.Indent();
  p.Print("static constexpr char const* service_full_name() { return \"$full$\"; }\n\n", "full",
          svc->full_name());
  PrintStubInterface(p, svc);
  PrintStub(p, svc);
  p.Print(
      "static std::unique_ptr<Stub> NewStub(\n"
      "    std::shared_ptr<::ringrpc::Channel> channel,\n"
      "    const ::ringrpc::StubOptions& options = ::ringrpc::StubOptions()) {\n"
      "  return std::make_unique<Stub>(std::move(channel), options);\n}\n");
  p.Outdent();
  p.Print("};\n\n");
}

}  // namespace

void WriteHeader(Printer& p, const FileDescriptor* file, const std::string& base,
                 const std::string& nested) {
  HeaderFrame frame(p, file, base, nested, "_RINGRPC_PB_H_",
                    "#include <functional>\n#include <memory>\n#include <optional>\n\n"
                    "#include \"$base$.pb.h\"\n"
                    "#include \"ringrpc/client/async_stream.h\"\n"
                    "#include \"ringrpc/client/async_unary_call.h\"\n"
                    "#include \"ringrpc/client/blocking_stream.h\"\n"
                    "#include \"ringrpc/client/callback_reactor.h\"\n"
                    "#include \"ringrpc/client/channel.h\"\n"
                    "#include \"ringrpc/client/completion_queue.h\"\n"
                    "#include \"ringrpc/client/typed_call.h\"\n\n");
  for (int s = 0; s < file->service_count(); ++s) PrintService(p, file->service(s));
  frame.Close();
}

}  // namespace ringrpc::codegen
