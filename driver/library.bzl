"""One concept of driver/ as its own library: <name>.cc and <name>.h, plus what is private to it."""

def concept_library(name, deps, private = [], hdrs = [], visibility = None):
    """A cc_library of `name`.cc with `name`.h and `hdrs` as its interface.

    `private` lists the files only this library's own files include (headers among them are not
    part of its interface).
    """
    native.cc_library(
        name = name,
        srcs = [name + ".cc"] + private,
        hdrs = [name + ".h"] + hdrs,
        visibility = visibility,
        deps = deps,
    )
