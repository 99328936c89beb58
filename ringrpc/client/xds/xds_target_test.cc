// xds: targets to Listener resource names (A27, A47's template).
#include "ringrpc/client/xds/xds_target.h"

#include <gtest/gtest.h>

namespace ringrpc::xds {
namespace {

TEST(XdsTarget, TheServiceNameIsTheListenerNameByDefault) {
  XdsBootstrap b;
  EXPECT_EQ(*ListenerResourceName("xds:///echo.svc:8080", b), "echo.svc:8080");
  EXPECT_EQ(*ListenerResourceName("xds:echo", b), "echo");
  EXPECT_EQ(*ListenerResourceName("xds:///a/b", b), "a/b");
}

TEST(XdsTarget, TheTemplateIsFilledAndAnXdstpNameIsPercentEncoded) {
  XdsBootstrap b;
  b.client_default_listener_resource_name_template = "prefix-%s";
  EXPECT_EQ(*ListenerResourceName("xds:///echo", b), "prefix-echo");
  b.client_default_listener_resource_name_template =
      "xdstp://cp.example/envoy.config.listener.v3.Listener/%s";
  EXPECT_EQ(*ListenerResourceName("xds:///my service?x", b),
            "xdstp://cp.example/envoy.config.listener.v3.Listener/my%20service%3Fx");
}

TEST(XdsTarget, BadTargetsSayWhy) {
  XdsBootstrap b;
  EXPECT_EQ(ListenerResourceName("dns:///echo", b).status().message(),
            "\"dns:///echo\" is not an xds: target");
  EXPECT_EQ(ListenerResourceName("xds:///", b).status().message(),
            "xds target \"xds:///\" names no service");
  EXPECT_EQ(ListenerResourceName("xds://authority.example/echo", b).status().message(),
            "xds target \"xds://authority.example/echo\" names the authority "
            "\"authority.example\": xDS federation (gRFC A47) is not supported");
  EXPECT_EQ(ListenerResourceName("xds:///", b).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringrpc::xds
