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

#include <map>
#include <memory>
#include <set>
#include <string>

namespace {

using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::compiler::CodeGenerator;
using google::protobuf::compiler::GeneratorContext;
using google::protobuf::io::Printer;

std::string StripProto(const std::string& name) {
  return name.size() > 6 && name.substr(name.size() - 6) == ".proto"
             ? name.substr(0, name.size() - 6)
             : name;
}

// "pkg.sub.Msg" -> "::pkg::sub::Msg"
std::string CppType(const std::string& full_name) {
  std::string out = "::";
  for (char c : full_name) {
    if (c == '.') {
      out += "::";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Namespace(const FileDescriptor* file) {
  std::string ns;
  for (char c : file->package()) ns += c == '.' ? std::string("::") : std::string(1, c);
  return ns;
}

// C++ keywords a proto name may legally be: such names get a trailing '_'
// (protoc's own rule for messages and fields).
bool IsCppKeyword(const std::string& s) {
  static const std::set<std::string> kKeywords = {
      "alignas",      "alignof",  "and",       "and_eq",   "asm",       "auto",
      "bitand",       "bitor",    "bool",      "break",    "case",      "catch",
      "char",         "class",    "compl",     "const",    "constexpr", "const_cast",
      "continue",     "decltype", "default",   "delete",   "do",        "double",
      "dynamic_cast", "else",     "enum",      "explicit", "export",    "extern",
      "false",        "float",    "for",       "friend",   "goto",      "if",
      "inline",       "int",      "long",      "mutable",  "namespace", "new",
      "noexcept",     "not",      "not_eq",    "nullptr",  "operator",  "or",
      "or_eq",        "private",  "protected", "public",   "register",  "reinterpret_cast",
      "return",       "short",    "signed",    "sizeof",   "static",    "static_assert",
      "static_cast",  "struct",   "switch",    "template", "this",      "thread_local",
      "throw",        "true",     "try",       "typedef",  "typeid",    "typename",
      "union",        "unsigned", "using",     "virtual",  "void",      "volatile",
      "wchar_t",      "while",    "xor",       "xor_eq",   "co_await",  "co_return",
      "co_yield",     "concept",  "requires"};
  return kKeywords.count(s) != 0;
}

std::string CppName(const std::string& s) { return IsCppKeyword(s) ? s + "_" : s; }

void Comments(Printer& p, const google::protobuf::SourceLocation& loc) {
  std::string text = loc.leading_comments;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    p.Print("//$line$\n", "line", line);
    start = end + 1;
  }
}

class Generator final : public CodeGenerator {
 public:
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }

  // Parameter: "nested_namespace=NAME" puts the stubs in
  // <package namespace>::NAME, so a program can also link grpc++'s
  // generated code for the same proto (same class names otherwise).
  bool Generate(const FileDescriptor* file, const std::string& parameter, GeneratorContext* context,
                std::string* error) const override {
    std::string nested;
    if (!parameter.empty()) {
      const std::string key = "nested_namespace=";
      if (parameter.rfind(key, 0) != 0 || parameter.size() == key.size()) {
        *error = "protoc-gen-ringrpc: unknown parameter \"" + parameter +
                 "\" (expected nested_namespace=NAME)";
        return false;
      }
      nested = parameter.substr(key.size());
      // Inside the package namespace, a nested "ringrpc" or "grpc" would
      // be what user code there means by ringrpc:: or grpc::.
      if (nested == "ringrpc" || nested == "grpc") {
        *error = "protoc-gen-ringrpc: nested_namespace=" + nested + " would hide ::" + nested +
                 " from code in the proto's package namespace; pick another name (e.g. ring)";
        return false;
      }
    }
    // Generated names that a method may not shadow.
    static const std::set<std::string> kReserved = {"NewStub", "Stub", "StubInterface", "async",
                                                    "channel"};
    for (int s = 0; s < file->service_count(); ++s) {
      const ServiceDescriptor* svc = file->service(s);
      for (int m = 0; m < svc->method_count(); ++m) {
        const std::string& name = svc->method(m)->name();
        // Foo's CompletionQueue form is AsyncFoo / PrepareAsyncFoo (and
        // their Raw methods): a method with one of those names would clash.
        for (int o = 0; o < svc->method_count(); ++o) {
          const std::string& other = svc->method(o)->name();
          for (const std::string& made :
               {"Async" + other, "PrepareAsync" + other, "Async" + other + "Raw",
                "PrepareAsync" + other + "Raw"}) {
            if (name == made) {
              *error = file->name() + ": method " + svc->full_name() + "." + name +
                       " clashes with the CompletionQueue form ringrpc generates for " +
                       svc->full_name() + "." + other;
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
    std::string base = StripProto(file->name());
    {
      std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
          context->Open(base + ".ringrpc.pb.h"));
      Printer p(out.get(), '$');
      Header(p, file, base, nested);
    }
    {
      std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
          context->Open(base + ".ringrpc.pb.cc"));
      Printer p(out.get(), '$');
      Source(p, file, base, nested);
    }
    return true;
  }

 private:
  // The blocking form's return type and parameters, as grpc++ has them.
  static std::pair<std::string, std::string> BlockingStream(const MethodDescriptor* m) {
    std::string req = CppType(m->input_type()->full_name());
    std::string resp = CppType(m->output_type()->full_name());
    if (m->server_streaming() && !m->client_streaming()) {
      return {"std::unique_ptr<::ringrpc::ClientReader<" + resp + ">>",
              "::ringrpc::ClientContext* context, const " + req + "& request"};
    }
    if (m->client_streaming() && !m->server_streaming()) {
      return {"std::unique_ptr<::ringrpc::ClientWriter<" + req + ">>",
              "::ringrpc::ClientContext* context, " + resp + "* response"};
    }
    return {"std::unique_ptr<::ringrpc::ClientReaderWriter<" + req + ", " + resp + ">>",
            "::ringrpc::ClientContext* context"};
  }

  // Everything a method's code is printed from; for streaming methods also
  // the blocking form's return type, parameters and how it is made.
  static std::map<std::string, std::string> Vars(const MethodDescriptor* m) {
    std::map<std::string, std::string> v = {
        {"name", CppName(m->name())},
        {"co_name", "co_" + m->name()},
        {"req", CppType(m->input_type()->full_name())},
        {"resp", CppType(m->output_type()->full_name())},
        {"path", "/" + m->service()->full_name() + "/" + m->name()},
        {"dep", m->options().deprecated() ? "[[deprecated]] " : ""}};
    AsyncVars(m, &v);
    if (m->client_streaming() || m->server_streaming()) {
      auto [ret, params] = BlockingStream(m);
      v["ret"] = ret;
      v["params"] = params;
      if (m->server_streaming() && !m->client_streaming()) {
        v["make"] = "std::make_unique<::ringrpc::ClientReader<" + v["resp"] +
                    ">>(std::move(call), status, request.SerializeAsString())";
        v["cb_params"] = "::ringrpc::ClientContext* context, const " + v["req"] +
                         "* request, ::ringrpc::ClientReadReactor<" + v["resp"] + ">* reactor";
        v["cb_bind"] =
            "::ringrpc::internal::ReactorKind::kServerStreaming, "
            "request->SerializeAsString()";
      } else if (m->client_streaming() && !m->server_streaming()) {
        v["make"] = "std::make_unique<::ringrpc::ClientWriter<" + v["req"] +
                    ">>(std::move(call), status, response)";
        v["cb_params"] = "::ringrpc::ClientContext* context, " + v["resp"] +
                         "* response, ::ringrpc::ClientWriteReactor<" + v["req"] + ">* reactor";
        v["cb_bind"] = "::ringrpc::internal::ReactorKind::kClientStreaming, \"\", response";
      } else {
        v["make"] = "std::make_unique<::ringrpc::ClientReaderWriter<" + v["req"] + ", " +
                    v["resp"] + ">>(std::move(call), status)";
        v["cb_params"] = "::ringrpc::ClientContext* context, ::ringrpc::ClientBidiReactor<" +
                         v["req"] + ", " + v["resp"] + ">* reactor";
        v["cb_bind"] = "::ringrpc::internal::ReactorKind::kBidi";
      }
    }
    return v;
  }

  // The CompletionQueue form, as grpc++ has it: AsyncFoo (started, with a
  // tag for a stream's start) and PrepareAsyncFoo (StartCall later), each
  // over a private virtual FooRaw that a mock overrides.
  static void AsyncVars(const MethodDescriptor* m, std::map<std::string, std::string>* v) {
    std::map<std::string, std::string>& x = *v;
    const std::string& req = x["req"];
    const std::string& resp = x["resp"];
    const std::string ctx = "::ringrpc::ClientContext* context, ";
    const std::string cq = "::ringrpc::CompletionQueue* cq";
    x["async_name"] = "Async" + m->name();
    x["prep_name"] = "PrepareAsync" + m->name();
    x["tag_param"] = ", void* tag";
    x["tag_arg"] = ", tag";
    x["no_tag"] = ", nullptr";
    if (!m->client_streaming() && !m->server_streaming()) {
      x["aiface"] = "::ringrpc::ClientAsyncResponseReaderInterface<" + resp + ">";
      x["acls"] = "::ringrpc::ClientAsyncResponseReader<" + resp + ">";
      x["aparams"] = ctx + "const " + req + "& request, " + cq;
      x["aargs"] = "context, request, cq";
      x["tag_param"] = x["tag_arg"] = x["no_tag"] = "";
    } else if (m->server_streaming() && !m->client_streaming()) {
      x["aiface"] = "::ringrpc::ClientAsyncReaderInterface<" + resp + ">";
      x["acls"] = "::ringrpc::ClientAsyncReader<" + resp + ">";
      x["aparams"] = ctx + "const " + req + "& request, " + cq;
      x["aargs"] = "context, request, cq";
    } else if (m->client_streaming() && !m->server_streaming()) {
      x["aiface"] = "::ringrpc::ClientAsyncWriterInterface<" + req + ">";
      x["acls"] = "::ringrpc::ClientAsyncWriter<" + req + ">";
      x["aparams"] = ctx + resp + "* response, " + cq;
      x["aargs"] = "context, response, cq";
    } else {
      x["aiface"] = "::ringrpc::ClientAsyncReaderWriterInterface<" + req + ", " + resp + ">";
      x["acls"] = "::ringrpc::ClientAsyncReaderWriter<" + req + ", " + resp + ">";
      x["aparams"] = ctx + cq;
      x["aargs"] = "context, cq";
    }
  }

  // AsyncFoo and PrepareAsyncFoo returning `type` (the interface's, or the
  // stub's concrete one) over their Raw methods.
  static void PrintAsyncEntryPoints(Printer& p, std::map<std::string, std::string> v,
                                    const std::string& type) {
    v["type"] = type;
    p.Print(v,
            "$dep$std::unique_ptr<$type$> $async_name$($aparams$$tag_param$) {\n"
            "  return std::unique_ptr<$type$>($async_name$Raw($aargs$$tag_arg$));\n}\n"
            "$dep$std::unique_ptr<$type$> $prep_name$($aparams$) {\n"
            "  return std::unique_ptr<$type$>($prep_name$Raw($aargs$));\n}\n");
  }

  static std::string FullNamespace(const FileDescriptor* file, const std::string& nested) {
    std::string ns = Namespace(file);
    if (!nested.empty()) ns += (ns.empty() ? "" : "::") + nested;
    return ns;
  }

  static void Header(Printer& p, const FileDescriptor* file, const std::string& base,
                     const std::string& nested) {
    std::string guard = "RINGRPC_GENERATED_" + base + "_RINGRPC_PB_H_";
    for (char& c : guard) {
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    }
    p.Print(
        "// Generated by protoc-gen-ringrpc from $file$. Do not edit.\n"
        "#ifndef $guard$\n#define $guard$\n\n"
        "#include <functional>\n#include <memory>\n#include <optional>\n\n"
        "#include \"$base$.pb.h\"\n"
        "#include \"ringrpc/client/async_stream.h\"\n"
        "#include \"ringrpc/client/async_unary_call.h\"\n"
        "#include \"ringrpc/client/blocking_stream.h\"\n"
        "#include \"ringrpc/client/callback_reactor.h\"\n"
        "#include \"ringrpc/client/channel.h\"\n"
        "#include \"ringrpc/client/completion_queue.h\"\n"
        "#include \"ringrpc/client/typed_call.h\"\n\n",
        "file", file->name(), "guard", guard, "base", base);
    std::string ns = FullNamespace(file, nested);
    if (!ns.empty()) p.Print("namespace $ns$ {\n\n", "ns", ns);
    for (int s = 0; s < file->service_count(); ++s) {
      const ServiceDescriptor* svc = file->service(s);
      google::protobuf::SourceLocation loc;
      if (svc->GetSourceLocation(&loc)) Comments(p, loc);
      if (svc->options().deprecated()) p.Print("// Deprecated.\n");
      p.Print("class $svc$ final {\n public:\n", "svc", CppName(svc->name()));
      p.Indent();
      p.Print("static constexpr char const* service_full_name() { return \"$full$\"; }\n\n", "full",
              svc->full_name());
      // StubInterface: pure virtual, for gMock.
      p.Print("class StubInterface {\n public:\n  virtual ~StubInterface() = default;\n");
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        auto v = Vars(md);
        if (md->client_streaming() || md->server_streaming()) {
          p.Print(v, "virtual $ret$ $name$($params$) = 0;\n");
          continue;
        }
        p.Print(v,
                "virtual ::ringrpc::Status $name$(::ringrpc::ClientContext* context, "
                "const $req$& request, $resp$* response) = 0;\n");
      }
      p.Print("// The CompletionQueue form.\n");
      for (int m = 0; m < svc->method_count(); ++m) {
        auto v = Vars(svc->method(m));
        PrintAsyncEntryPoints(p, v, v["aiface"]);
      }
      p.Outdent();
      p.Print(" private:\n");
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        p.Print(Vars(svc->method(m)),
                "virtual $aiface$* $async_name$Raw($aparams$$tag_param$) = 0;\n"
                "virtual $aiface$* $prep_name$Raw($aparams$) = 0;\n");
      }
      p.Outdent();
      p.Print("};\n\n");
      p.Print("class Stub final : public StubInterface {\n public:\n");
      p.Indent();
      p.Print(
          "explicit Stub(std::shared_ptr<::ringrpc::Channel> channel,\n"
          "              const ::ringrpc::StubOptions& = ::ringrpc::StubOptions())\n"
          "    : channel_(std::move(channel)) {}\n\n");
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        google::protobuf::SourceLocation loc;
        if (md->GetSourceLocation(&loc)) Comments(p, loc);
        auto v = Vars(md);
        if (!md->client_streaming() && !md->server_streaming()) {
          p.Print(v,
                  "// Blocking (not on one of the channel's CQ threads).\n"
                  "$dep$::ringrpc::Status $name$(::ringrpc::ClientContext* context, "
                  "const $req$& request, $resp$* response) override;\n"
                  "// Coroutine (on one of the channel's CQ threads).\n"
                  "$dep$::ringrpc::Task<::ringrpc::Status> $co_name$(::ringrpc::ClientContext* "
                  "context, const $req$& request, $resp$* response);\n\n");
        } else {
          p.Print(v,
                  "// Streaming, blocking form (not on one of the channel's CQ threads).\n"
                  "$dep$$ret$ $name$($params$) override;\n");
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
      }
      // Callback forms.
      p.Print("class async_interface {\n public:\n");
      p.Indent();
      p.Print("explicit async_interface(Stub* stub) : stub_(stub) {}\n");
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        if (md->client_streaming() || md->server_streaming()) {
          p.Print(Vars(md),
                  "// Binds `reactor` to a new call; start it with reactor->StartCall().\n"
                  "void $name$($cb_params$);\n");
          continue;
        }
        p.Print(Vars(md),
                "// `done` runs once, on a CQ thread; request and response must outlive it.\n"
                "void $name$(::ringrpc::ClientContext* context, const $req$* request, "
                "$resp$* response, std::function<void(::ringrpc::Status)> done);\n"
                "// Binds `reactor` (OnReadInitialMetadataDone, OnDone) to a new call;\n"
                "// start it with reactor->StartCall(). The response must outlive OnDone.\n"
                "void $name$(::ringrpc::ClientContext* context, const $req$* request, "
                "$resp$* response, ::ringrpc::ClientUnaryReactor* reactor);\n");
      }
      p.Outdent();
      p.Print(" private:\n  Stub* stub_;\n};\n");
      p.Print("async_interface* async() { return &async_; }\n");
      p.Print(
          "const std::shared_ptr<::ringrpc::Channel>& channel() const { return channel_; }\n\n");
      p.Print(
          "// The CompletionQueue form: completions are tags on `cq`; AsyncFoo\n"
          "// starts the call, PrepareAsyncFoo leaves it to StartCall.\n");
      for (int m = 0; m < svc->method_count(); ++m) {
        auto v = Vars(svc->method(m));
        PrintAsyncEntryPoints(p, v, v["acls"]);
      }
      p.Outdent();
      p.Print(
          "\n private:\n  std::shared_ptr<::ringrpc::Channel> channel_;\n  async_interface "
          "async_{this};\n");
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        auto v = Vars(svc->method(m));
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
      p.Print(
          "static std::unique_ptr<Stub> NewStub(\n"
          "    std::shared_ptr<::ringrpc::Channel> channel,\n"
          "    const ::ringrpc::StubOptions& options = ::ringrpc::StubOptions()) {\n"
          "  return std::make_unique<Stub>(std::move(channel), options);\n}\n");
      p.Outdent();
      p.Print("};\n\n");
    }
    if (!ns.empty()) p.Print("}  // namespace $ns$\n\n", "ns", ns);
    p.Print("#endif  // $guard$\n", "guard", guard);
  }

  static void Source(Printer& p, const FileDescriptor* file, const std::string& base,
                     const std::string& nested) {
    p.Print(
        "// Generated by protoc-gen-ringrpc from $file$. Do not edit.\n"
        "#include \"$base$.ringrpc.pb.h\"\n\n",
        "file", file->name(), "base", base);
    std::string ns = FullNamespace(file, nested);
    if (!ns.empty()) p.Print("namespace $ns$ {\n\n", "ns", ns);
    for (int s = 0; s < file->service_count(); ++s) {
      const ServiceDescriptor* svc = file->service(s);
      std::string cls = CppName(svc->name());
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        auto v = Vars(md);
        v["cls"] = cls;
        if (!md->client_streaming() && !md->server_streaming()) {
          p.Print(
              v,
              "::ringrpc::Status $cls$::Stub::$name$(::ringrpc::ClientContext* context, "
              "const $req$& request, $resp$* response) {\n"
              "  ::ringrpc::ByteBuffer reply;\n"
              "  ::ringrpc::Status s = channel_->BlockingUnaryCall(\"$path$\", context, "
              "request.SerializeAsString(), &reply);\n"
              "  return ::ringrpc::ParseReply(s, reply, response);\n}\n\n"
              "::ringrpc::Task<::ringrpc::Status> $cls$::Stub::$co_name$("
              "::ringrpc::ClientContext* context, const $req$& request, $resp$* response) {\n"
              "  ::ringrpc::ByteBuffer reply;\n"
              "  ::ringrpc::Status s = co_await channel_->Unary(\"$path$\", context, "
              "request.SerializeAsString(), &reply);\n"
              "  co_return ::ringrpc::ParseReply(s, reply, response);\n}\n\n"
              "void $cls$::Stub::async_interface::$name$(::ringrpc::ClientContext* context, "
              "const $req$* request, $resp$* response, "
              "std::function<void(::ringrpc::Status)> done) {\n"
              "  auto reply = std::make_shared<::ringrpc::ByteBuffer>();\n"
              "  stub_->channel_->UnaryCallAsync(\"$path$\", context, "
              "request->SerializeAsString(), reply.get(),\n"
              "      [reply, response, done = std::move(done)](::ringrpc::Status s) {\n"
              "        done(::ringrpc::ParseReply(s, *reply, response));\n"
              "      });\n}\n\n"
              "void $cls$::Stub::async_interface::$name$(::ringrpc::ClientContext* context, "
              "const $req$* request, $resp$* response, ::ringrpc::ClientUnaryReactor* reactor) {\n"
              "  ::ringrpc::internal::BindReactor(reactor, stub_->channel_, \"$path$\", context, "
              "::ringrpc::internal::ReactorKind::kUnary, request->SerializeAsString(), response);\n"
              "}\n\n");
        } else {
          p.Print(v,
                  "$ret$ $cls$::Stub::$name$($params$) {\n"
                  "  ::ringrpc::Status status;\n"
                  "  std::unique_ptr<::ringrpc::ClientCall> call = "
                  "channel_->BlockingOpen(\"$path$\", context, &status);\n"
                  "  return $make$;\n}\n\n");
          p.Print(v,
                  "::ringrpc::Task<std::unique_ptr<::ringrpc::TypedCall<$req$, $resp$>>> "
                  "$cls$::Stub::$co_name$(::ringrpc::ClientContext* context, "
                  "::ringrpc::Status* status) {\n"
                  "  std::unique_ptr<::ringrpc::ClientCall> call = co_await "
                  "channel_->Open(\"$path$\", context, status);\n"
                  "  if (call == nullptr) co_return nullptr;\n"
                  "  co_return std::make_unique<::ringrpc::TypedCall<$req$, "
                  "$resp$>>(std::move(call));\n"
                  "}\n\n");
          if (!md->client_streaming()) {
            p.Print(
                v,
                "::ringrpc::Task<std::unique_ptr<::ringrpc::TypedCall<$req$, $resp$>>> "
                "$cls$::Stub::$co_name$(::ringrpc::ClientContext* context, const $req$& request, "
                "::ringrpc::Status* status) {\n"
                "  std::unique_ptr<::ringrpc::TypedCall<$req$, $resp$>> call = "
                "co_await $co_name$(context, status);\n"
                "  if (call == nullptr) co_return nullptr;\n"
                "  (void)co_await call->Write(request);  // a failed write ends the call: "
                "Finish says why\n"
                "  call->WritesDone();\n"
                "  co_return call;\n"
                "}\n\n");
          }
          p.Print(v,
                  "void $cls$::Stub::async_interface::$name$($cb_params$) {\n"
                  "  ::ringrpc::internal::BindReactor(reactor, stub_->channel_, \"$path$\", "
                  "context, $cb_bind$);\n"
                  "}\n\n");
        }
      }
    }
    if (!ns.empty()) p.Print("}  // namespace $ns$\n", "ns", ns);
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  Generator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
