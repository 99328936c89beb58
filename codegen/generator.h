// codegen/generator.h — what protoc-gen-ringrpc's writers share: C++ names
// for proto elements and the variables each method's code is printed from.
// One file per output: generator_header.cc (X.ringrpc.pb.h),
// generator_source.cc (X.ringrpc.pb.cc), generator_mock.cc
// (X_mock.ringrpc.pb.h); ringrpc_plugin.cc checks the input and calls them.
#ifndef RINGRPC_CODEGEN_GENERATOR_H_
#define RINGRPC_CODEGEN_GENERATOR_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>

#include <map>
#include <string>

namespace ringrpc::codegen {

using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::io::Printer;
using Vars = std::map<std::string, std::string>;

// "dir/x.proto" -> "dir/x"
std::string StripProto(const std::string& name);
// "pkg.sub.Msg" -> "::pkg::sub::Msg"
std::string CppType(const std::string& full_name);
// A proto name as C++ may spell it: a keyword gets a trailing '_'.
std::string CppName(const std::string& s);
// The proto package's namespace, with `nested` inside it when not empty.
std::string FullNamespace(const FileDescriptor* file, const std::string& nested);
// A generated header's frame: the provenance line, the include guard
// (made of base + guard_suffix), `includes` (Printer text, where $base$
// is the proto's base name) and the namespace opened; Close() ends the
// namespace and the guard.
class HeaderFrame {
 public:
  HeaderFrame(Printer& p, const FileDescriptor* file, const std::string& base,
              const std::string& nested, const std::string& guard_suffix, const char* includes);
  void Close();

 private:
  Printer& p_;
  const std::string guard_;
  const std::string ns_;
};
// An element's leading comments, as // lines.
void Comments(Printer& p, const google::protobuf::SourceLocation& loc);
// A server, client or bidi streaming method (not unary).
inline bool Streaming(const MethodDescriptor* m) {
  return m->client_streaming() || m->server_streaming();
}
// Everything a method's code is printed from (see generator_names.cc).
Vars MethodVars(const MethodDescriptor* m);

// The three outputs for `file` ("base" is its name without .proto;
// `nested` the nested_namespace parameter or empty).
void WriteHeader(Printer& p, const FileDescriptor* file, const std::string& base,
                 const std::string& nested);
void WriteSource(Printer& p, const FileDescriptor* file, const std::string& base,
                 const std::string& nested);
void WriteMockHeader(Printer& p, const FileDescriptor* file, const std::string& base,
                     const std::string& nested);

}  // namespace ringrpc::codegen

#endif  // RINGRPC_CODEGEN_GENERATOR_H_
