"""ringrpc_cc_library: messages and ringrpc stubs from .proto files.

    load("//codegen:ringrpc.bzl", "ringrpc_cc_library")
    ringrpc_cc_library(name = "greeter", srcs = ["greeter.proto"])

Runs Debian's protoc with protoc-gen-ringrpc; yields a cc_library with
X.pb.{h,cc} and X.ringrpc.pb.{h,cc}. Paths are relative to the workspace
root (protoc -I.), so `import "pkg/other.proto";` works for protos of this
workspace listed in `deps`' proto_srcs.
"""

# Labels resolve to ringrpc's repository even when this file is loaded from
# another workspace (@ringrpc//codegen:ringrpc.bzl).
_PLUGIN = Label("//codegen:protoc-gen-ringrpc")

def ringrpc_cc_library(
        name,
        srcs,
        deps = [],
        proto_deps = [],
        nested_namespace = "",
        testonly = False,
        visibility = None):
    """Declares `name` (the cc_library) and `name`_gen (the protoc run).

    Args:
      name: the cc_library.
      srcs: .proto files in this package.
      deps: other ringrpc_cc_library targets these protos import.
      proto_deps: the .proto files those imports name (protoc reads them).
      nested_namespace: put the stubs in <package>::<this> (to link grpc++'s
        generated code for the same protos in one program).
      testonly: as for any rule.
      visibility: of the cc_library.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc", base + ".ringrpc.pb.h", base + ".ringrpc.pb.cc"]
    native.genrule(
        name = name + "_gen",
        testonly = testonly,
        srcs = srcs + proto_deps,
        outs = outs,
        tools = [_PLUGIN],
        cmd = ("/usr/bin/protoc -I. --cpp_out=$(GENDIR) " +
               ("--ringrpc_out=nested_namespace=%s:$(GENDIR) " % nested_namespace if nested_namespace else "--ringrpc_out=$(GENDIR) ") +
               "--plugin=protoc-gen-ringrpc=$(location %s) " % str(_PLUGIN) +
               " ".join(["$(location %s)" % s for s in srcs])),
    )
    native.cc_library(
        name = name,
        testonly = testonly,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + [
            Label("//client"),
            Label("//client:callback_reactor"),
            Label("//client:typed_call"),
            "@system//:protobuf",
        ],
        visibility = visibility,
    )
