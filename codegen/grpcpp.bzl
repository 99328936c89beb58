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

def grpcpp_cc_library(name, srcs, deps = [], **kwargs):
    """grpc++'s stubs as a cc_library.

    Args:
      name: the cc_library.
      srcs: proto_library targets.
      deps: the cc_proto_library with their messages.
      **kwargs: testonly, visibility, ... of the cc_library.
    """
    proto_stubs_cc_library(
        name = name,
        srcs = srcs,
        plugin = Label("@system//:grpc_cpp_plugin"),
        suffixes = [".grpc.pb.h", ".grpc.pb.cc"],
        deps = deps + [Label("@system//:grpcpp")],
        **kwargs
    )
