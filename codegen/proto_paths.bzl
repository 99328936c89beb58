"""Where protoc knows a .proto file, for the rules that run protoc."""

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
