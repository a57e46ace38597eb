"""Which compiler commit built a kernel directory: scripts/aot records it in
every manifest (`source_commit`, with "-dirty" for uncommitted changes), so a
benchmark run on the GPU machine, which has no git checkout, still names the
commit of the kernels it timed."""
import glob
import json
import os


def of_kernel_dir(path):
    """The manifests' common source_commit; "mixed:A,B" if they differ,
    "unknown" if none records one (older kernels, or no directory)."""
    seen = set()
    for f in sorted(glob.glob(os.path.join(path, "*.json"))):
        try:
            with open(f) as fh:
                commit = json.load(fh).get("source_commit")
        except (OSError, ValueError, AttributeError):
            continue
        if commit:
            seen.add(commit)
    if not seen:
        return "unknown"
    if len(seen) == 1:
        return seen.pop()
    return "mixed:" + ",".join(sorted(seen))
