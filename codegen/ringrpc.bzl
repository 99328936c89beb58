"""ringrpc_cc_library: ringrpc stubs for proto_library targets.

The shape of grpc++'s cc_grpc_library(grpc_only = True):

    proto_library(name = "greeter_proto", srcs = ["greeter.proto"])
    cc_proto_library(name = "greeter_cc_proto", deps = [":greeter_proto"])

    load("@ringrpc//codegen:ringrpc.bzl", "ringrpc_cc_library")
    ringrpc_cc_library(
        name = "greeter_ringrpc",
        srcs = [":greeter_proto"],       # proto_library targets, any repository
        deps = [":greeter_cc_proto"],    # the messages: your cc_proto_library
    )

Only the stubs are generated (X.ringrpc.pb.h/.cc), from the ProtoInfo of
`srcs`: protoc reads their transitive sources under their import roots, so imports,
strip_import_prefix / import_prefix and the well-known types work as they do
for cc_proto_library. The header's include path is the proto's import path
(`#include "pkg/greeter.ringrpc.pb.h"` beside cc_proto_library's
`"pkg/greeter.pb.h"`), wherever the proto lives. The messages are the ones
your cc_proto_library (or grpc++'s generated code) already links: one set
of message classes per program.

The convenience form takes .proto files of this package instead and
declares the proto_library (NAME_proto) and cc_proto_library (NAME_cc_proto)
itself:

    ringrpc_cc_library(name = "greeter", srcs = ["greeter.proto"])

`proto_stubs_cc_library` is the same machinery for any C++ protoc plugin;
ringrpc's tests and examples use it with Debian's grpc_cpp_plugin for the
grpc++ side of the same protos.
"""

load("//codegen:proto_paths.bzl", "output_group_filegroups", "proto_import_path")

# Labels resolve to ringrpc's repository even when this file is loaded from
# another workspace (@ringrpc//codegen:ringrpc.bzl).
_RINGRPC_PLUGIN = Label("//codegen:protoc-gen-ringrpc")
_RINGRPC_RUNTIME = [
    Label("//ringrpc/client"),
    Label("//ringrpc/client:callback_reactor"),
    Label("//ringrpc/client:completion_queue"),
    Label("//ringrpc/client:typed_call"),
]

_RINGRPC_MOCKS = Label("//ringrpc/testing:mock_stream")

def _proto_stubs_impl(ctx):
    out_prefix = "_" + ctx.label.name
    headers = []
    sources = []
    mocks = []
    import_paths = []
    out_dir = None
    for src in ctx.attr.srcs:
        info = src[ProtoInfo]
        for proto in info.direct_sources:
            import_path = proto_import_path(proto, info.proto_source_root)
            import_paths.append(import_path)
            base = import_path[:-len(".proto")]
            for suffix in ctx.attr.suffixes:
                rel = base + suffix
                out = ctx.actions.declare_file(out_prefix + "/" + rel)
                if "_mock." in suffix:
                    mocks.append(out)
                else:
                    (headers if suffix.endswith(".h") else sources).append(out)

                # protoc writes <out_dir>/<import path minus .proto><suffix>.
                out_dir = out.path[:-len(rel) - 1]
    if not import_paths:
        fail("%s: srcs hold no .proto files" % ctx.label)

    # protoc reads the .proto files themselves (not the descriptor sets:
    # those lack the comments the stubs copy), each import root as -I.
    protos = depset(transitive = [src[ProtoInfo].transitive_sources for src in ctx.attr.srcs])
    roots = depset(transitive = [src[ProtoInfo].transitive_proto_path for src in ctx.attr.srcs])
    plugin = ctx.executable.plugin
    out_flag = out_dir
    if ctx.attr.plugin_options:
        out_flag = ",".join(ctx.attr.plugin_options) + ":" + out_dir
    args = ctx.actions.args()
    args.add("--plugin=protoc-gen-stubs=" + plugin.path)
    args.add("--stubs_out=" + out_flag)
    args.add_all(roots, format_each = "-I%s")
    args.add_all(import_paths)
    ctx.actions.run(
        executable = ctx.executable._protoc,
        arguments = [args],
        inputs = protos,
        tools = [plugin],
        outputs = headers + sources + mocks,
        mnemonic = "ProtoStubs",
        progress_message = "Generating %s stubs for %s" % (plugin.basename, ctx.label),
    )
    return [
        DefaultInfo(
            files = depset(headers + sources + mocks),
            runfiles = ctx.runfiles(files = headers + sources + mocks),
        ),
        OutputGroupInfo(
            headers = depset(headers),
            sources = depset(sources),
            mocks = depset(mocks),
        ),
    ]

_proto_stubs = rule(
    implementation = _proto_stubs_impl,
    attrs = {
        "srcs": attr.label_list(providers = [ProtoInfo], mandatory = True),
        "plugin": attr.label(executable = True, cfg = "exec", mandatory = True),
        "plugin_options": attr.string_list(),
        "suffixes": attr.string_list(mandatory = True),
        "_protoc": attr.label(
            default = Label("@com_google_protobuf//:protoc"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def proto_stubs_cc_library(
        name,
        srcs,
        plugin,
        suffixes,
        deps = [],
        plugin_options = [],
        mock_deps = [],
        **kwargs):
    """A cc_library of a C++ protoc plugin's output for proto_library targets.

    Args:
      name: the cc_library.
      srcs: proto_library targets whose own .proto files get stubs.
      plugin: the protoc plugin (an executable label).
      suffixes: what the plugin appends to each proto's base name, headers
        first (e.g. [".grpc.pb.h", ".grpc.pb.cc"]).
      deps: the cc_proto_library of srcs, and what the stubs link.
      plugin_options: passed to the plugin (--stubs_out=OPTS:DIR).
      mock_deps: with a suffix holding "_mock." (a mock header), the deps
        of NAME_mock, the testonly cc_library of those headers.
      **kwargs: testonly, visibility, tags, copts, ... of the cc_library.
    """
    testonly = kwargs.get("testonly", False)
    _proto_stubs(
        name = name + "_gen",
        srcs = srcs,
        plugin = plugin,
        plugin_options = plugin_options,
        suffixes = suffixes,
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    has_mocks = len([s for s in suffixes if "_mock." in s]) > 0
    output_group_filegroups(
        name + "_gen",
        ["headers", "sources"] + (["mocks"] if has_mocks else []),
        testonly = testonly,
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_gen_sources"],
        hdrs = [":" + name + "_gen_headers"],
        strip_include_prefix = "_" + name + "_gen",
        deps = deps,
        **kwargs
    )
    if has_mocks:
        mock_kwargs = {k: v for k, v in kwargs.items() if k in ["visibility", "tags"]}
        native.cc_library(
            name = name + "_mock",
            hdrs = [":" + name + "_gen_mocks"],
            strip_include_prefix = "_" + name + "_gen",
            deps = [":" + name] + mock_deps,
            testonly = True,
            **mock_kwargs
        )

def ringrpc_cc_library(
        name,
        srcs,
        deps = [],
        proto_deps = [],
        nested_namespace = "",
        generate_mocks = False,
        **kwargs):
    """ringrpc's stubs (X.ringrpc.pb.{h,cc}) as a cc_library.

    Args:
      name: the cc_library.
      srcs: proto_library targets (any repository), or .proto files of this
        package (then NAME_proto and NAME_cc_proto are declared here).
      deps: with proto_library srcs, the cc_proto_library (or grpc++'s
        generated library) that holds their messages. With .proto files,
        the other ringrpc_cc_library targets (convenience form) whose
        protos these import.
      proto_deps: convenience form only: further proto_library targets the
        files import (e.g. "@com_google_protobuf//:timestamp_proto").
      nested_namespace: put the stubs in <package>::<this>, to link grpc++'s
        generated stubs for the same protos in one program.
      generate_mocks: also X_mock.ringrpc.pb.h (Mock<Service>Stub for gMock,
        as grpc++'s generate_mock_code) in the testonly cc_library NAME_mock.
      **kwargs: testonly, visibility, tags, copts, ... of the cc_library.
    """
    files = [s for s in srcs if s.endswith(".proto")]
    if files and len(files) != len(srcs):
        fail("%s: srcs mixes .proto files and proto_library targets" % name)
    if files:
        testonly = kwargs.get("testonly", False)
        visibility = kwargs.get("visibility", None)
        native.proto_library(
            name = name + "_proto",
            srcs = files,
            deps = [d + "_proto" for d in deps] + proto_deps,
            testonly = testonly,
            visibility = visibility,
        )
        native.cc_proto_library(
            name = name + "_cc_proto",
            deps = [":" + name + "_proto"],
            testonly = testonly,
            visibility = visibility,
        )
        srcs = [":" + name + "_proto"]
        deps = [":" + name + "_cc_proto"] + deps
    elif proto_deps:
        fail("%s: proto_deps is for the .proto-file form; list proto_library targets in srcs" % name)
    proto_stubs_cc_library(
        name = name,
        srcs = srcs,
        plugin = _RINGRPC_PLUGIN,
        plugin_options = (["nested_namespace=" + nested_namespace] if nested_namespace else []) +
                         (["generate_mock_code=true"] if generate_mocks else []),
        suffixes = [".ringrpc.pb.h", ".ringrpc.pb.cc"] +
                   (["_mock.ringrpc.pb.h"] if generate_mocks else []),
        deps = deps + _RINGRPC_RUNTIME,
        mock_deps = [_RINGRPC_MOCKS],
        **kwargs
    )
