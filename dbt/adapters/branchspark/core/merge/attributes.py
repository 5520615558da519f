"""Attributes merged three-way: a value, or a mapping of properties key by key (SPEC 3.2, 3.3)."""


def three_way(base, src, dest, keep_dest: bool = False):
    """src's value if src changed it, else dest's; dest's where both changed it and `keep_dest` (ours)."""
    if src == base or (keep_dest and dest != base):
        return dest
    return src


def merge_properties(base: dict, src: dict, dest: dict, keep_dest: bool = False) -> dict:
    """dest's properties with src's changes replayed; with `keep_dest` (ours), not those dest changed too."""
    merged = dict(dest)
    for key in set(base) | set(src):
        if src.get(key) == base.get(key) or (keep_dest and dest.get(key) != base.get(key)):
            continue
        if key in src:
            merged[key] = src[key]
        else:
            merged.pop(key, None)
    return merged
