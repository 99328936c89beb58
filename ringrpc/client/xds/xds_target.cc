#include "ringrpc/client/xds/xds_target.h"

#include "absl/strings/str_cat.h"

namespace ringrpc::xds {
namespace {

// RFC 3986's unreserved characters and the path's own separators stay; the
// rest is %XX (what A47 asks of a name put into an xdstp: template).
std::string PercentEncodePath(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~' || c == '/' || c == ':' ||
                      c == '@';
    if (keep) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ListenerResourceName(std::string_view target,
                                                 const XdsBootstrap& bootstrap) {
  constexpr std::string_view kScheme = "xds:";
  if (target.substr(0, kScheme.size()) != kScheme) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", std::string(target), "\" is not an xds: target"));
  }
  std::string_view rest = target.substr(kScheme.size());
  if (rest.substr(0, 2) == "//") {
    rest.remove_prefix(2);
    const size_t slash = rest.find('/');
    const std::string_view authority = rest.substr(0, slash);
    if (!authority.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("xds target \"", std::string(target), "\" names the authority \"",
                       std::string(authority), "\": xDS federation (gRFC A47) is not supported"));
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("xds target \"", std::string(target), "\" names no service"));
  }
  const std::string& tmpl = bootstrap.client_default_listener_resource_name_template;
  const std::string name =
      tmpl.rfind("xdstp:", 0) == 0 ? PercentEncodePath(rest) : std::string(rest);
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == 's') {
      out += name;
      ++i;
    } else {
      out.push_back(tmpl[i]);
    }
  }
  return out;
}

}  // namespace ringrpc::xds
