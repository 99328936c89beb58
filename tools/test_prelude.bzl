"""ringrpc_cc_test: a cc_test whose compile starts from a precompiled prelude.

Half of a test file's compile is parsing the same third-party headers (gtest,
gMock, the C++ library, protobuf's message headers): retry_test.cc takes 8.2 s
at -O1, 4.0 s of them in its includes alone. `test_prelude` compiles those
headers once per configuration into a GCC precompiled header; every
`ringrpc_cc_test` force-includes it (`-include`), so GCC loads the parsed
headers instead of parsing them again (retry_test.cc: 8.2 s -> 6.3 s, under
ASAN+UBSAN 15.9 s -> 12.9 s).

A precompiled header is used only when it was built with the flags of the
compile that loads it (the same -O level, sanitizers, -g, -std, -fPIC);
`-Winvalid-pch` makes a mismatch a warning, and -Werror (.bazelrc) an error,
so it cannot silently stop being used. The -O level of test code is set in
two places, .bazelrc's --per_file_copt and the select() in
tests/testing/BUILD.bazel; they must agree. With clang (--config=fuzz, or a
user's CC=clang) no precompiled header is made and the prelude is an
ordinary header.

The prelude holds third-party headers only: no test gains a dependency on
ringrpc through it, and library headers stay compiled on their own.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _test_prelude_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    header = ctx.actions.declare_file(ctx.attr.name + "/" + ctx.attr.include_as)
    ctx.actions.expand_template(template = ctx.file.hdr, output = header, substitutions = {})
    # GCC lists neither a precompiled header nor its header in the .d
    # file, and Bazel keeps only what the .d file lists as a compile's
    # inputs for the next build: a changed prelude would not recompile the
    # tests. Each test also includes this stamp (the prelude, commented
    # out), which the .d file does list.
    stamp = ctx.actions.declare_file(ctx.attr.name + "/" + STAMP)
    ctx.actions.run_shell(
        inputs = [ctx.file.hdr],
        outputs = [stamp],
        command = "sed 's|^|// |' \"$1\" > \"$2\"",
        arguments = [ctx.file.hdr.path, stamp.path],
        mnemonic = "TestPreludeStamp",
    )
    headers = [header, stamp]
    compiler = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = "c++-compile",
    )
    if "clang" not in compiler.split("/")[-1] and cc_toolchain.compiler != "clang":
        pch = ctx.actions.declare_file(header.basename + ".gch", sibling = header)
        variables = cc_common.create_compile_variables(
            cc_toolchain = cc_toolchain,
            feature_configuration = feature_configuration,
            source_file = header.path,
            output_file = pch.path,
            user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts +
                                 ctx.attr.copts + ["-x", "c++-header"],
            use_pic = True,
        )
        ctx.actions.run(
            executable = compiler,
            arguments = cc_common.get_memory_inefficient_command_line(
                feature_configuration = feature_configuration,
                action_name = "c++-compile",
                variables = variables,
            ),
            env = cc_common.get_environment_variables(
                feature_configuration = feature_configuration,
                action_name = "c++-compile",
                variables = variables,
            ),
            inputs = depset([header], transitive = [cc_toolchain.all_files]),
            outputs = [pch],
            mnemonic = "CppPrecompileHeader",
            progress_message = "Precompiling %s" % ctx.file.hdr.short_path,
        )
        headers.append(pch)
    return [CcInfo(compilation_context = cc_common.create_compilation_context(
        headers = depset(headers),
        quote_includes = depset([header.dirname]),
    ))]

test_prelude = rule(
    implementation = _test_prelude_impl,
    doc = "A header of third-party includes, precompiled for this configuration.",
    attrs = {
        "hdr": attr.label(allow_single_file = [".h"], mandatory = True),
        "include_as": attr.string(mandatory = True, doc = "the name tests -include"),
        "copts": attr.string_list(doc = "what --per_file_copt adds to test code here"),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)

PRELUDE = "//tests/testing:prelude"
STAMP = "ringrpc_test_prelude_stamp.h"

# Only the first -include can be a precompiled header.
PRELUDE_COPTS = ["-include", "ringrpc_test_prelude.h", "-include", STAMP, "-Winvalid-pch"]

def ringrpc_cc_test(name, deps = [], copts = [], **kwargs):
    """A cc_test compiled from the precompiled test prelude (see above)."""
    native.cc_test(
        name = name,
        deps = deps + [PRELUDE],
        copts = copts + PRELUDE_COPTS,
        **kwargs
    )
