"""What a workspace that depends on ringrpc calls from its WORKSPACE.

    local_repository(name = "ringrpc", path = "/path/to/ringrpc")
    load("@ringrpc//:deps.bzl", "ringrpc_dependencies")
    ringrpc_dependencies()

Everything comes from Debian's packages and from files in ringrpc's own
checkout (found through their labels: the path is written once, above):
- rules_cc and remote_coverage_tools: offline stand-ins Bazel 4.2.3 wants
  (third_party/README.md);
- platforms, bazel_skylib, rules_proto, rules_java: Debian's copies under
  /usr/share/bazel;
- com_google_protobuf: Debian's protoc, libprotobuf and well-known .proto
  files, so proto_library and cc_proto_library work;
- system: Debian's libraries under /usr, as ringrpc's BUILD files name them.
A repository the workspace declared before this call is left as it is.
"""

# The release this checkout is (ringrpc/client/version.h and CMakeLists.txt agree:
# tools/check-version.sh).
RINGRPC_VERSION = "0.1.0"

def _checkout_dir_impl(rctx):
    # rctx.attr.marker is a file at the top of the directory to mirror.
    src = rctx.path(rctx.attr.marker).dirname
    for child in src.readdir():
        rctx.symlink(child, child.basename)

# A directory of ringrpc's checkout as a repository of its own.
_checkout_dir = repository_rule(
    implementation = _checkout_dir_impl,
    attrs = {"marker": attr.label(allow_single_file = True)},
    local = True,
)

def _maybe(rule, name, **kwargs):
    if name not in native.existing_rules():
        rule(name = name, **kwargs)

def ringrpc_dependencies():
    _maybe(_checkout_dir, "rules_cc", marker = Label("//third_party/rules_cc:WORKSPACE"))
    _maybe(
        _checkout_dir,
        "remote_coverage_tools",
        marker = Label("//third_party/remote_coverage_tools:WORKSPACE"),
    )
    for name, path in [
        ("platforms", "/usr/share/bazel/tools/platforms"),
        ("bazel_skylib", "/usr/share/bazel/tools/skylib"),
        ("rules_proto", "/usr/share/bazel/rules/proto"),
        ("rules_java", "/usr/share/bazel/rules/java"),
    ]:
        _maybe(native.local_repository, name, path = path)
    _maybe(
        native.new_local_repository,
        "com_google_protobuf",
        build_file = str(Label("//third_party:protobuf.BUILD")),
        path = "/usr",
    )
    _maybe(
        native.new_local_repository,
        "system",
        build_file = str(Label("//third_party:system.BUILD")),
        path = "/usr",
    )
