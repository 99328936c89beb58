#include <cctype>
#include <set>

#include "codegen/generator.h"

namespace ringrpc::codegen {

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

namespace {

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

}  // namespace

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

std::string FullNamespace(const FileDescriptor* file, const std::string& nested) {
  std::string ns = Namespace(file);
  if (!nested.empty()) ns += (ns.empty() ? "" : "::") + nested;
  return ns;
}

std::string Guard(const std::string& name) {
  std::string guard = "RINGRPC_GENERATED_" + name;
  for (char& c : guard) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  }
  return guard;
}

namespace {

// The blocking form's class (ClientReader<R>, ...), the interface it
// implements, its parameters and their names, as grpc++ has them.
struct BlockingShape {
  std::string cls, iface, params, args;
};
BlockingShape BlockingStream(const MethodDescriptor* m) {
  std::string req = CppType(m->input_type()->full_name());
  std::string resp = CppType(m->output_type()->full_name());
  if (m->server_streaming() && !m->client_streaming()) {
    return {"::ringrpc::ClientReader<" + resp + ">",
            "::ringrpc::ClientReaderInterface<" + resp + ">",
            "::ringrpc::ClientContext* context, const " + req + "& request", "context, request"};
  }
  if (m->client_streaming() && !m->server_streaming()) {
    return {"::ringrpc::ClientWriter<" + req + ">", "::ringrpc::ClientWriterInterface<" + req + ">",
            "::ringrpc::ClientContext* context, " + resp + "* response", "context, response"};
  }
  return {"::ringrpc::ClientReaderWriter<" + req + ", " + resp + ">",
          "::ringrpc::ClientReaderWriterInterface<" + req + ", " + resp + ">",
          "::ringrpc::ClientContext* context", "context"};
}

// The CompletionQueue form, as grpc++ has it: AsyncFoo (started, with a
// tag for a stream's start) and PrepareAsyncFoo (StartCall later), each
// over a private virtual FooRaw that a mock overrides.
void AsyncVars(const MethodDescriptor* m, Vars* v) {
  Vars& x = *v;
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

}  // namespace

// Everything a method's code is printed from; for streaming methods also
// the blocking form's return type, parameters and how it is made.
Vars MethodVars(const MethodDescriptor* m) {
  Vars v = {{"name", CppName(m->name())},
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

}  // namespace ringrpc::codegen
