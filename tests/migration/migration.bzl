"""migrated_client: a grpc++ client and the ringrpc client tools/migrate.sh
makes of it, built from the one source file grpcpp/NAME.cc."""

def migrated_client(name, grpcpp_deps, ringrpc_deps, test = False):
    """grpcpp_NAME from grpcpp/NAME.cc; ringrpc_NAME from its rewrite.

    Args:
      name: the source's base name.
      grpcpp_deps: what the grpc++ version links.
      ringrpc_deps: what the ringrpc version links.
      test: cc_test targets (gtest) instead of cc_binary.
    """
    native.genrule(
        name = name + "_migrated",
        srcs = ["grpcpp/" + name + ".cc"],
        outs = ["ringrpc/" + name + ".cc"],
        cmd = "RINGRPC_LABEL=//ringrpc $(location //tools:migrate.sh) < $< > $@",
        tools = ["//tools:migrate.sh"],
        testonly = True,
    )
    rule = native.cc_test if test else native.cc_binary
    extra = {"size": "small"} if test else {}
    rule(
        name = "grpcpp_" + name,
        srcs = ["grpcpp/" + name + ".cc"],
        deps = grpcpp_deps,
        testonly = True,
        **extra
    )
    rule(
        name = "ringrpc_" + name,
        srcs = [":" + name + "_migrated"],
        deps = ringrpc_deps,
        testonly = True,
        **extra
    )
