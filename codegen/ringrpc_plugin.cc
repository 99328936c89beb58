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
#include <utility>
#include <vector>

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

  // Parameters, comma-separated: "nested_namespace=NAME" puts the stubs in
  // <package namespace>::NAME, so a program can also link grpc++'s
  // generated code for the same proto (same class names otherwise);
  // "generate_mock_code=true" also writes X_mock.ringrpc.pb.h (gMock
  // stubs), as grpc_cpp_plugin's option of the same name.
  bool Generate(const FileDescriptor* file, const std::string& parameter, GeneratorContext* context,
                std::string* error) const override {
    std::string nested;
    bool mocks = false;
    std::vector<std::pair<std::string, std::string>> options;
    google::protobuf::compiler::ParseGeneratorParameter(parameter, &options);
    for (const auto& [key, value] : options) {
      if (key == "generate_mock_code" && (value == "true" || value == "false")) {
        mocks = value == "true";
        continue;
      }
      if (key != "nested_namespace" || value.empty()) {
        *error = "protoc-gen-ringrpc: unknown parameter \"" + key + (value.empty() ? "" : "=") +
                 value + "\" (expected nested_namespace=NAME or generate_mock_code=true)";
        return false;
      }
      nested = value;
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
        // their Raw methods), a stream's blocking form is over FooRaw: a
        // method with one of those names would clash.
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
    if (mocks) {
      std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
          context->Open(base + "_mock.ringrpc.pb.h"));
      Printer p(out.get(), '$');
      MockHeader(p, file, base, nested);
    }
    return true;
  }

 private:
  // The blocking form's class (ClientReader<R>, ...), the interface it
  // implements, its parameters and their names, as grpc++ has them.
  struct BlockingShape {
    std::string cls, iface, params, args;
  };
  static BlockingShape BlockingStream(const MethodDescriptor* m) {
    std::string req = CppType(m->input_type()->full_name());
    std::string resp = CppType(m->output_type()->full_name());
    if (m->server_streaming() && !m->client_streaming()) {
      return {"::ringrpc::ClientReader<" + resp + ">",
              "::ringrpc::ClientReaderInterface<" + resp + ">",
              "::ringrpc::ClientContext* context, const " + req + "& request", "context, request"};
    }
    if (m->client_streaming() && !m->server_streaming()) {
      return {"::ringrpc::ClientWriter<" + req + ">",
              "::ringrpc::ClientWriterInterface<" + req + ">",
              "::ringrpc::ClientContext* context, " + resp + "* response", "context, response"};
    }
    return {"::ringrpc::ClientReaderWriter<" + req + ", " + resp + ">",
            "::ringrpc::ClientReaderWriterInterface<" + req + ", " + resp + ">",
            "::ringrpc::ClientContext* context", "context"};
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
      BlockingShape b = BlockingStream(m);
      v["bcls"] = b.cls;
      v["biface"] = b.iface;
      v["params"] = b.params;
      v["bargs"] = b.args;
      if (m->server_streaming() && !m->client_streaming()) {
        v["make"] = "new ::ringrpc::ClientReader<" + v["resp"] +
                    ">(std::move(call), status, request.SerializeAsString())";
        v["cb_params"] = "::ringrpc::ClientContext* context, const " + v["req"] +
                         "* request, ::ringrpc::ClientReadReactor<" + v["resp"] + ">* reactor";
        v["cb_bind"] =
            "::ringrpc::internal::ReactorKind::kServerStreaming, "
            "request->SerializeAsString()";
      } else if (m->client_streaming() && !m->server_streaming()) {
        v["make"] =
            "new ::ringrpc::ClientWriter<" + v["req"] + ">(std::move(call), status, response)";
        v["cb_params"] = "::ringrpc::ClientContext* context, " + v["resp"] +
                         "* response, ::ringrpc::ClientWriteReactor<" + v["req"] + ">* reactor";
        v["cb_bind"] = "::ringrpc::internal::ReactorKind::kClientStreaming, \"\", response";
      } else {
        v["make"] = "new ::ringrpc::ClientReaderWriter<" + v["req"] + ", " + v["resp"] +
                    ">(std::move(call), status)";
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

  // A blocking stream's Foo returning `type` (the interface's, or the
  // stub's concrete class) over its Raw method.
  static void PrintRawEntryPoint(Printer& p, std::map<std::string, std::string> v,
                                 const std::string& type) {
    v["type"] = type;
    p.Print(v,
            "$dep$std::unique_ptr<$type$> $name$($params$) {\n"
            "  return std::unique_ptr<$type$>($name$Raw($bargs$));\n}\n");
  }

  // The callback form's declarations of one method; `tail` is " = 0" (the
  // interface) or " override" (the stub's).
  static void PrintCallbackDecls(Printer& p, const MethodDescriptor* md, const std::string& tail) {
    auto v = Vars(md);
    v["tail"] = tail;
    v["virt"] = tail == " = 0" ? "virtual " : "";
    if (md->client_streaming() || md->server_streaming()) {
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

  // The include guard of a generated header: `name` upper-cased, every
  // character that is not a letter or digit as '_'.
  static std::string Guard(const std::string& name) {
    std::string guard = "RINGRPC_GENERATED_" + name;
    for (char& c : guard) {
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    }
    return guard;
  }

  static void Header(Printer& p, const FileDescriptor* file, const std::string& base,
                     const std::string& nested) {
    const std::string guard = Guard(base + "_RINGRPC_PB_H_");
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
      // StubInterface, as grpc++'s: what a test double implements (the
      // generated Mock<Service>Stub does). Streams and the CompletionQueue
      // form come through private virtual FooRaw methods; the callback
      // form through async().
      p.Print("class StubInterface {\n public:\n  virtual ~StubInterface() = default;\n");
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        auto v = Vars(md);
        if (md->client_streaming() || md->server_streaming()) {
          PrintRawEntryPoint(p, v, v["biface"]);
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
        if (md->client_streaming() || md->server_streaming()) {
          p.Print(Vars(md), "virtual $biface$* $name$Raw($params$) = 0;\n");
        }
        p.Print(Vars(md),
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
      }
      // Callback forms.
      p.Print("class async final : public StubInterface::async_interface {\n public:\n");
      p.Indent();
      p.Print("explicit async(Stub* stub) : stub_(stub) {}\n");
      for (int m = 0; m < svc->method_count(); ++m)
        PrintCallbackDecls(p, svc->method(m), " override");
      p.Outdent();
      p.Print(" private:\n  Stub* stub_;\n};\n");
      p.Print("class async* async() override { return &async_; }\n");
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
          "\n private:\n  std::shared_ptr<::ringrpc::Channel> channel_;\n  class async "
          "async_{this};\n");
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        if (md->client_streaming() || md->server_streaming()) {
          p.Print(Vars(md), "$bcls$* $name$Raw($params$) override;\n");
        }
      }
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

  // A MOCK_METHOD's parameter list: the types of `params` ("T a, U b"),
  // each in parentheses when it holds a comma (a template's arguments).
  static std::string MockParams(const std::string& params) {
    std::string out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= params.size(); ++i) {
      const char c = i < params.size() ? params[i] : ',';
      if (c == '<') ++depth;
      if (c == '>') --depth;
      if (c != ',' || depth != 0) continue;
      std::string one = params.substr(start, i - start);
      while (!one.empty() && one.front() == ' ') one.erase(0, 1);
      const size_t name = one.find_last_of(" *&");
      std::string type = one.substr(0, name + 1);
      while (!type.empty() && type.back() == ' ') type.pop_back();
      if (type.find(',') != std::string::npos) type = "(" + type + ")";
      out += (out.empty() ? "" : ", ") + type;
      start = i + 1;
    }
    return out;
  }

  static std::string MockType(const std::string& type) {
    return type.find(',') != std::string::npos ? "(" + type + ")" : type;
  }

  // X_mock.ringrpc.pb.h: Mock<Service>Stub for every service, as
  // grpc_cpp_plugin's generate_mock_code: every method in the blocking,
  // stream and CompletionQueue forms, and the callback form through a
  // MockAsync that async() returns.
  static void MockHeader(Printer& p, const FileDescriptor* file, const std::string& base,
                         const std::string& nested) {
    const std::string guard = Guard(base + "_MOCK_RINGRPC_PB_H_");
    p.Print(
        "// Generated by protoc-gen-ringrpc from $file$. Do not edit.\n"
        "#ifndef $guard$\n#define $guard$\n\n"
        "#include <gmock/gmock.h>\n\n"
        "#include \"$base$.ringrpc.pb.h\"\n"
        "#include \"ringrpc/testing/mock_stream.h\"\n\n",
        "file", file->name(), "guard", guard, "base", base);
    std::string ns = FullNamespace(file, nested);
    if (!ns.empty()) p.Print("namespace $ns$ {\n\n", "ns", ns);
    for (int s = 0; s < file->service_count(); ++s) {
      const ServiceDescriptor* svc = file->service(s);
      const std::string cls = CppName(svc->name());
      p.Print("class Mock$svc$Stub : public $cls$::StubInterface {\n public:\n", "svc", svc->name(),
              "cls", cls);
      p.Indent();
      p.Print("class MockAsync : public $cls$::StubInterface::async_interface {\n public:\n", "cls",
              cls);
      p.Indent();
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        auto v = Vars(md);
        if (md->client_streaming() || md->server_streaming()) {
          v["mp"] = MockParams(v["cb_params"]);
          p.Print(v, "MOCK_METHOD(void, $name$, ($mp$), (override));\n");
          continue;
        }
        v["mp"] = "::ringrpc::ClientContext*, const " + v["req"] + "*, " + v["resp"] + "*";
        p.Print(v,
                "MOCK_METHOD(void, $name$, ($mp$, std::function<void(::ringrpc::Status)>), "
                "(override));\n"
                "MOCK_METHOD(void, $name$, ($mp$, ::ringrpc::ClientUnaryReactor*), (override));\n");
      }
      p.Outdent();
      p.Print("};\n\n");
      p.Print(
          "// async() returns mock_async() unless a test says otherwise.\n"
          "Mock$svc$Stub() {\n"
          "  ON_CALL(*this, async()).WillByDefault(::testing::Return(&mock_async_));\n}\n"
          "MockAsync& mock_async() { return mock_async_; }\n"
          "MOCK_METHOD(async_interface*, async, (), (override));\n",
          "svc", svc->name());
      for (int m = 0; m < svc->method_count(); ++m) {
        const MethodDescriptor* md = svc->method(m);
        auto v = Vars(md);
        if (md->client_streaming() || md->server_streaming()) {
          v["mp"] = MockParams(v["params"]);
          v["mt"] = MockType(v["biface"] + "*");
          p.Print(v, "MOCK_METHOD($mt$, $name$Raw, ($mp$), (override));\n");
        } else {
          p.Print(v,
                  "MOCK_METHOD(::ringrpc::Status, $name$, (::ringrpc::ClientContext*, const "
                  "$req$&, $resp$*), (override));\n");
        }
        v["mt"] = MockType(v["aiface"] + "*");
        v["mp"] = MockParams(v["aparams"]);
        v["mpt"] = MockParams(v["aparams"] + v["tag_param"]);
        p.Print(v,
                "MOCK_METHOD($mt$, $async_name$Raw, ($mpt$), (override));\n"
                "MOCK_METHOD($mt$, $prep_name$Raw, ($mp$), (override));\n");
      }
      p.Outdent();
      p.Print("\n private:\n  ::testing::NiceMock<MockAsync> mock_async_;\n};\n\n");
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
              "void $cls$::Stub::async::$name$(::ringrpc::ClientContext* context, "
              "const $req$* request, $resp$* response, "
              "std::function<void(::ringrpc::Status)> done) {\n"
              "  auto reply = std::make_shared<::ringrpc::ByteBuffer>();\n"
              "  stub_->channel_->UnaryCallAsync(\"$path$\", context, "
              "request->SerializeAsString(), reply.get(),\n"
              "      [reply, response, done = std::move(done)](::ringrpc::Status s) {\n"
              "        done(::ringrpc::ParseReply(s, *reply, response));\n"
              "      });\n}\n\n"
              "void $cls$::Stub::async::$name$(::ringrpc::ClientContext* context, "
              "const $req$* request, $resp$* response, ::ringrpc::ClientUnaryReactor* reactor) {\n"
              "  ::ringrpc::internal::BindReactor(reactor, stub_->channel_, \"$path$\", context, "
              "::ringrpc::internal::ReactorKind::kUnary, request->SerializeAsString(), response);\n"
              "}\n\n");
        } else {
          p.Print(v,
                  "$bcls$* $cls$::Stub::$name$Raw($params$) {\n"
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
                  "void $cls$::Stub::async::$name$($cb_params$) {\n"
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
