// ringrpc/client/xds/xds_target.h — from an `xds:` target to the Listener resource
// the client asks the management server for (gRFC A27, with A47's name
// template): "xds:///service" names the listener "service", or the
// bootstrap's client_default_listener_resource_name_template with "%s"
// replaced by it (percent-encoded first when the template is an xdstp: name).
//
//   absl::StatusOr<std::string> lds = ListenerResourceName("xds:///echo", bootstrap);
#ifndef RINGRPC_CLIENT_XDS_XDS_TARGET_H_
#define RINGRPC_CLIENT_XDS_XDS_TARGET_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ringrpc/client/xds/bootstrap.h"

namespace ringrpc::xds {

// INVALID_ARGUMENT for a target that is not "xds:///name" (an empty name,
// or an authority: federation is not supported).
absl::StatusOr<std::string> ListenerResourceName(std::string_view target,
                                                 const XdsBootstrap& bootstrap);

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_XDS_TARGET_H_
