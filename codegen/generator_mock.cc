// X_mock.ringrpc.pb.h: Mock<Service>Stub for every service, as
// grpc_cpp_plugin's generate_mock_code: every method in the blocking,
// stream and CompletionQueue forms, and the callback form through a
// MockAsync that async() returns.
#include "codegen/generator.h"

namespace ringrpc::codegen {
namespace {

// A MOCK_METHOD's parameter list: the types of `params` ("T a, U b"),
// each in parentheses when it holds a comma (a template's arguments).
std::string MockParams(const std::string& params) {
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

std::string MockType(const std::string& type) {
  return type.find(',') != std::string::npos ? "(" + type + ")" : type;
}

}  // namespace

void WriteMockHeader(Printer& p, const FileDescriptor* file, const std::string& base,
                     const std::string& nested) {
  HeaderFrame frame(p, file, base, nested, "_MOCK_RINGRPC_PB_H_",
                    "#include <gmock/gmock.h>\n\n"
                    "#include \"$base$.ringrpc.pb.h\"\n"
                    "#include \"ringrpc/testing/mock_stream.h\"\n\n");
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
      Vars v = MethodVars(md);
      if (Streaming(md)) {
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
      Vars v = MethodVars(md);
      if (Streaming(md)) {
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
  frame.Close();
}

}  // namespace ringrpc::codegen
