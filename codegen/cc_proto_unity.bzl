"""cc_proto_unity_library: protobuf's C++ code for one proto_library's own
files, compiled as one translation unit.

For a large set of generated files that change only when they are
re-vendored (ringrpc's xDS protos: 66 files). Each X.pb.cc spends most of
its compile parsing the same protobuf and .pb.h headers; one unity file
that includes every X.pb.cc parses them once (measured on the xDS protos
at -O0 on 2 cores, both under the same load: 190 s of compiles as 66
files, about 35 s as one).
What it generates is what cc_proto_library generates (the same protoc, the
same headers at the same include paths); only the compile is shared. Two
file-level arrays that every X.pb.cc names alike are renamed per file.

    cc_proto_unity_library(
        name = "xds_cc_proto",
        src = ":xds_proto",                  # one proto_library
        deps = [],                           # cc libraries of its imports
    )

Unlike cc_proto_library it does not compile the proto_library's deps: the
imports' C++ code comes from `deps` (or, for the well-known types, from
libprotobuf).
"""

load("//codegen:proto_paths.bzl", "output_group_filegroups", "proto_import_path")

# Every header an X.pb.cc includes besides its own X.pb.h (protoc 3.21):
# included once before the renames, so that none of them is first read
# while a rename is defined.
_PRE_INCLUDES = [
    "google/protobuf/descriptor.h",
    "google/protobuf/extension_set.h",
    "google/protobuf/generated_message_reflection.h",
    "google/protobuf/io/coded_stream.h",
    "google/protobuf/reflection_ops.h",
    "google/protobuf/wire_format.h",
    "google/protobuf/wire_format_lite.h",
]

# File-level statics every X.pb.cc defines under the same name.
_PER_FILE_NAMES = ["schemas", "file_default_instances"]

def _unity_impl(ctx):
    info = ctx.attr.src[ProtoInfo]
    prefix = "_" + ctx.label.name
    headers = []
    sources = []
    bases = []
    out_dir = None
    for proto in info.direct_sources:
        base = proto_import_path(proto, info.proto_source_root)[:-len(".proto")]
        bases.append(base)
        headers.append(ctx.actions.declare_file(prefix + "/" + base + ".pb.h"))
        sources.append(ctx.actions.declare_file(prefix + "/" + base + ".pb.cc"))
        out_dir = headers[-1].path[:-len(base + ".pb.h") - 1]
    if not bases:
        fail("%s: %s holds no .proto files" % (ctx.label, ctx.attr.src.label))
    args = ctx.actions.args()
    args.add("--cpp_out=" + out_dir)
    args.add_all(info.transitive_proto_path, format_each = "-I%s")
    args.add_all([b + ".proto" for b in bases])
    ctx.actions.run(
        executable = ctx.executable._protoc,
        arguments = [args],
        inputs = info.transitive_sources,
        outputs = headers + sources,
        mnemonic = "GenProtoUnity",
        progress_message = "Generating C++ code for %s" % ctx.attr.src.label,
    )
    lines = ["// Generated: every X.pb.cc of %s as one translation unit." % ctx.attr.src.label]
    lines += ['#include "%s"' % h for h in _PRE_INCLUDES]
    lines += ['#include "%s.pb.h"' % b for b in bases]
    for i, base in enumerate(bases):
        lines += ["#define %s %s_%d" % (n, n, i) for n in _PER_FILE_NAMES]
        lines.append('#include "%s.pb.cc"' % base)
        lines += ["#undef %s" % n for n in _PER_FILE_NAMES]
    unity = ctx.actions.declare_file(prefix + "/" + ctx.label.name + "_unity.pb.cc")
    ctx.actions.write(unity, "\n".join(lines) + "\n")
    return [
        DefaultInfo(files = depset(headers + sources + [unity])),
        OutputGroupInfo(
            headers = depset(headers),
            sources = depset(sources),
            unity = depset([unity]),
        ),
    ]

_unity = rule(
    implementation = _unity_impl,
    attrs = {
        "src": attr.label(providers = [ProtoInfo], mandatory = True),
        "_protoc": attr.label(
            default = Label("@com_google_protobuf//:protoc"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def cc_proto_unity_library(name, src, deps = [], **kwargs):
    """A cc_library of protobuf's C++ code for `src`'s own .proto files.

    Args:
      name: the cc_library.
      src: one proto_library.
      deps: the cc libraries of the protos it imports (not the well-known
        types: libprotobuf has those).
      **kwargs: copts, visibility, testonly, tags of the cc_library.
    """
    _unity(name = name + "_gen", src = src, visibility = ["//visibility:private"])
    output_group_filegroups(name + "_gen", ["headers", "sources", "unity"])
    native.cc_library(
        name = name,
        srcs = [":" + name + "_gen_unity"],
        hdrs = [":" + name + "_gen_headers"],
        # Compiled only through the unity file.
        textual_hdrs = [":" + name + "_gen_sources"],
        strip_include_prefix = "_" + name + "_gen",
        deps = deps + [Label("@com_google_protobuf//:protobuf")],
        **kwargs
    )
