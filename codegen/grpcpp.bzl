"""grpcpp_cc_library: grpc++'s own stubs (X.grpc.pb.{h,cc}) from Debian's
grpc_cpp_plugin, for proto_library targets.

What grpc's cc_grpc_library(grpc_only = True) gives a workspace that can
download gRPC; offline, ringrpc's tests, examples and benchmarks use this
for the grpc++ side (servers, baseline clients) of the same protos:

    load("@ringrpc//codegen:grpcpp.bzl", "grpcpp_cc_library")
    grpcpp_cc_library(
        name = "greeter_grpc",
        srcs = [":greeter_proto"],
        deps = [":greeter_cc_proto"],
    )
"""

load("//codegen:ringrpc.bzl", "proto_stubs_cc_library")

def grpcpp_cc_library(name, srcs, deps = [], generate_mocks = False, **kwargs):
    """grpc++'s stubs as a cc_library.

    Args:
      name: the cc_library.
      srcs: proto_library targets.
      deps: the cc_proto_library with their messages.
      generate_mocks: also X_mock.grpc.pb.h (grpc++'s MockServiceStub), in
        the testonly cc_library NAME_mock, as cc_grpc_library's option.
      **kwargs: testonly, visibility, ... of the cc_library.
    """
    proto_stubs_cc_library(
        name = name,
        srcs = srcs,
        plugin = Label("@system//:grpc_cpp_plugin"),
        plugin_options = ["generate_mock_code=true"] if generate_mocks else [],
        suffixes = [".grpc.pb.h", ".grpc.pb.cc"] + (["_mock.grpc.pb.h"] if generate_mocks else []),
        deps = deps + [Label("@system//:grpcpp")],
        mock_deps = [Label("@system//:gtest")],
        **kwargs
    )
