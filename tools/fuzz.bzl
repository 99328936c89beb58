"""ringrpc_fuzz_target: a libFuzzer binary and a test replaying its corpus."""

def ringrpc_fuzz_target(name, src, corpus, deps):
    """Declares `name` (libFuzzer, --config=fuzz) and `name`_corpus_test.

    Args:
      name: the fuzzer binary's name.
      src: the file defining LLVMFuzzerTestOneInput.
      corpus: the folder (in this package) of committed seed inputs.
      deps: what `src` needs.
    """
    flags = ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize=function,vptr"]
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = [src],
        copts = select({
            "//tools:fuzzing": flags,
            "//conditions:default": [],
        }),
        linkopts = select({
            "//tools:fuzzing": flags,
            "//conditions:default": [],
        }),
        tags = ["manual"],
        deps = deps,
    )
    native.cc_test(
        name = name + "_corpus_test",
        size = "small",
        srcs = [src],
        args = [native.package_name() + "/" + corpus],
        data = native.glob([corpus + "/*"]),
        deps = deps + ["//tests/fuzz:corpus_replay_main"],
    )
