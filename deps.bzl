"""What a workspace that depends on ringrpc calls from its WORKSPACE.

    local_repository(name = "ringrpc", path = "/path/to/ringrpc")
    load("@ringrpc//:deps.bzl", "ringrpc_dependencies")
    ringrpc_dependencies(ringrpc_path = "/path/to/ringrpc")

It declares the offline shims (rules_cc, remote_coverage_tools) and
@system (Debian's libraries under /usr) that ringrpc's BUILD files use.
Copy ringrpc's .bazelrc lines (--override_repository, C++20) too.
"""

def ringrpc_dependencies(ringrpc_path):
    native.local_repository(
        name = "rules_cc",
        path = ringrpc_path + "/third_party/rules_cc",
    )
    native.local_repository(
        name = "remote_coverage_tools",
        path = ringrpc_path + "/third_party/remote_coverage_tools",
    )
    native.new_local_repository(
        name = "system",
        build_file = str(Label("//third_party:system.BUILD")),
        path = "/usr",
    )
