"""What the rules that run protoc share: where protoc knows a .proto file,
and one filegroup per output group of a generating target."""

def proto_import_path(src, proto_source_root):
    """The path protoc knows `src` by (what an `import` statement names)."""
    path = src.path
    if proto_source_root and proto_source_root != "." and path.startswith(proto_source_root + "/"):
        return path[len(proto_source_root) + 1:]

    # No import root of its own: the path inside its repository.
    short = src.short_path
    if short.startswith("../"):
        short = short.split("/", 2)[2]
    return short

def output_group_filegroups(gen, groups, testonly = False):
    """A private filegroup GEN_<group> of target GEN's output group, each."""
    for group in groups:
        native.filegroup(
            name = gen + "_" + group,
            srcs = [":" + gen],
            output_group = group,
            testonly = testonly,
            visibility = ["//visibility:private"],
        )
