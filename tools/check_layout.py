#!/usr/bin/env python3
"""Checks strux's layout rules: which folder may include which.

    tools/check_layout.py [ROOT]        exit 0 when every rule holds, 1 otherwise

The tree is a set of modules, one per folder of product code; a module is the
files directly in its folder (a subfolder is a module of its own).  Each
module names its contract: the header(s) other folders may include.  The rules:

  1. Contract: a product file outside a module includes only that module's
     contract header(s).  Tests, fuzz targets and benches may also include the
     white-box headers listed in WHITE_BOX (kernel tables, tokenizer tables,
     ...), each named here on purpose; product code never may.
  2. Direction (what a folder may depend on at all):
       grammar/**            never includes engine/, rpc/ or kernels/
       grammar/compile/      never includes grammar/match/, nor match/ compile/:
       grammar/match/        the compiler writes the compiled grammar (ir/),
       grammar/ir/           the matcher only reads it; both may use ir/, and
                             ir/ includes neither
       grammar/validator/    includes nothing of grammar/ outside itself (not
                             the compiler, the matcher, the regex engine, the
                             formats or the vocabulary): its re-check is an
                             independent opinion only while it shares no code
       kernels/              never includes engine/, grammar/ or rpc/ (device
                             kernels, launchers and CPU references only; the
                             CUDA backend that drives them is engine/cuda/)
       engine/**             never includes rpc/
       common/               includes only common/
  3. Each module uses only the modules its ALLOWED row names (the README's
     "may use" column); rule 2 is the part of it that matters most.
  4. Every folder of product code that holds sources is declared in MODULES,
     so a new subfolder gets a contract before anything includes it.

Only quoted includes ("...") are project includes; <...> are system headers.
Why a script and not the compiler: -I. lets any file include any header, so
nothing but this check keeps the layout's promises.
"""
import os
import re
import sys

# module folder -> its contract header(s) (file names in that folder)
MODULES = {
    "common": {"sx_error.h", "sx_file.h", "sx_numjson.h", "sx_pyjson.h", "sx_text.h",
               "sx_sample_math.h", "sx_bf16.h", "sx_utf8.h"},
    "grammar": {"grammar.h"},
    "grammar/ir": {"ir.h"},          # the compiled grammar: data + pure queries
    "grammar/compile": set(),        # implements grammar.h's compile calls; no header of its own
    "grammar/match": set(),          # implements grammar.h's matcher calls; no header of its own
    "grammar/regex": {"regex.h"},
    "grammar/formats": {"formats.h"},
    "grammar/validator": {"validator.h"},
    "grammar/vocab": {"vocab.h"},
    "grammar/fuzzgen": {"fuzzgen.h", "schemagen.h"},
    "engine": {"generate.h", "perplexity.h", "beam.h", "backend.h",
               "kv_pages.h"},  # kv_pages.h: the paged-KV bookkeeping both backends use
    "engine/tokenizer": {"tokenizer.h"},
    "engine/model": {"model.h"},
    "engine/cpu": {"engine.h"},
    "engine/sampler": {"sampler.h"},
    "engine/cuda": {"engine_cuda.h"},
    "kernels": {"sx_kernels.h", "cuda_check.h"},
    "rpc": {"server.h", "client.h", "protocol.h"},
    # the option tables: the server's main parses its options with them too
    "tools/strux": {"cli_opts.h"},
    "tools/struxd": set(),
}

# headers that tests, fuzz targets and benches may include although they are
# not contracts: white-box tests of a module's insides
WHITE_BOX = {
    "engine/cpu/cpu_kernels.h",          # kernel tables, every ISA path against the scalar one
    "engine/cpu/threadpool.h",           # kernel tests and benches drive the pool directly
    "engine/sampler/sampler_internal.h",  # sampler stages tested one by one
    "engine/tokenizer/tokenizer_internal.h",  # BPE and pre-tokenizer tables
    "grammar/ir/ir.h",                   # the compiled grammar's node graph and queries
    "grammar/match/match.h",             # matcher internals (arena, frames, reference walk)
    "grammar/compile/keywords.h",        # the compiler's keyword table, checked in order
    "rpc/schema_cache.h",                # the cache tested without a server
    "rpc/tool_stream.h",                 # the streamed tool-call scanner fed in every split
}

# module -> the other modules it may include (their contracts): the README's
# "may use" column.  Widening a row is a design decision, made here on purpose.
GRAMMAR_ALL = {"grammar", "grammar/regex", "grammar/formats", "grammar/validator", "grammar/vocab",
               "grammar/fuzzgen"}
ENGINE_PARTS = {"engine/tokenizer", "engine/model", "engine/cpu", "engine/sampler", "engine/cuda"}
ALLOWED = {
    "common": set(),
    "grammar/regex": {"common"},
    "grammar/vocab": {"common"},
    "grammar/validator": {"common"},
    "grammar/formats": {"common", "grammar/regex"},
    "grammar/fuzzgen": {"common", "grammar", "grammar/validator", "grammar/vocab"},
    "grammar": {"common"} | GRAMMAR_ALL - {"grammar/fuzzgen"},
    # the three parts of the grammar engine: the compiler writes the
    # compiled grammar (ir/), the matcher only reads it; neither includes
    # the other, and ir/ includes neither
    "grammar/ir": {"common", "grammar", "grammar/regex", "grammar/vocab"},
    "grammar/compile": {"common", "grammar", "grammar/ir", "grammar/regex", "grammar/formats",
                        "grammar/validator", "grammar/vocab"},
    "grammar/match": {"common", "grammar", "grammar/ir", "grammar/vocab"},
    "engine/model": {"common"},
    "engine/tokenizer": {"common", "grammar/vocab"},
    "engine/cpu": {"common", "engine", "engine/model"},
    "engine/sampler": {"common"},
    "engine/cuda": {"common", "engine", "engine/model", "engine/sampler", "kernels"},
    "engine": {"common"} | GRAMMAR_ALL | ENGINE_PARTS,
    "kernels": {"common"},
    "rpc": {"common", "engine", "kernels"} | GRAMMAR_ALL | ENGINE_PARTS,
    "tools/strux": {"common", "engine", "kernels", "rpc"} | GRAMMAR_ALL | ENGINE_PARTS,
    "tools/struxd": {"common", "engine", "kernels", "rpc", "tools/strux"} | GRAMMAR_ALL | ENGINE_PARTS,
}

# the named rules, reported in their own words: folder prefix -> folder
# prefixes it must never include
FORBIDDEN = [
    ("grammar/", ("engine/", "rpc/", "kernels/")),
    ("grammar/compile/", ("grammar/match/",)),
    ("grammar/match/", ("grammar/compile/",)),
    ("grammar/ir/", ("grammar/compile/", "grammar/match/")),
    ("kernels/", ("engine/", "grammar/", "rpc/")),
    ("engine/", ("rpc/",)),
]

PRODUCT_ROOTS = ("common", "engine", "grammar", "kernels", "rpc", "tools")
TEST_ROOTS = ("tests", "bench", "examples")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, top):
    for d, subdirs, files in os.walk(os.path.join(root, top)):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(d, f), root)


def includes(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    for m in INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1)


def check(root):
    problems = []
    if set(ALLOWED) != set(MODULES):
        return ["tools/check_layout.py: MODULES and ALLOWED name different folders: %s"
                % ", ".join(sorted(set(ALLOWED) ^ set(MODULES)))]

    def bad(path, line, msg):
        problems.append("%s:%d: %s" % (path, line, msg))

    # rule 4: every product folder with sources is a declared module
    for top in PRODUCT_ROOTS:
        for path in sources(root, top):
            folder = os.path.dirname(path)
            if folder not in MODULES and not path.endswith((".sh", ".py")):
                bad(path, 1, "folder %s/ is not a declared module: give it a contract in "
                    "tools/check_layout.py MODULES" % folder)
                break

    for top in PRODUCT_ROOTS + TEST_ROOTS:
        if not os.path.isdir(os.path.join(root, top)):
            continue
        is_test = top in TEST_ROOTS
        for path in sources(root, top):
            folder = os.path.dirname(path)
            for line, inc in includes(root, path):
                inc_folder = os.path.dirname(inc)
                if inc_folder not in MODULES:
                    continue  # a test helper, a system-like header in tests/
                if not os.path.exists(os.path.join(root, inc)):
                    bad(path, line, '"%s" does not exist' % inc)
                    continue
                # rule 2: direction
                if folder == "grammar/validator" and inc_folder != folder \
                        and inc_folder.split("/")[0] != "common":
                    bad(path, line, 'the validator includes "%s": it must stay independent of '
                        "the grammar compiler, matcher and regex engine (common/ only)" % inc)
                named = False
                for prefix, never in FORBIDDEN:
                    if (folder + "/").startswith(prefix) and inc.startswith(never):
                        bad(path, line, '%s includes "%s": %s never includes %s'
                            % (folder + "/", inc, prefix, " or ".join(never)))
                        named = True
                if not is_test and not named and inc_folder != folder \
                        and inc_folder not in ALLOWED[folder] and folder != "grammar/validator":
                    bad(path, line, '%s/ may not use %s/ (it may use: %s)'
                        % (folder, inc_folder, ", ".join(sorted(ALLOWED[folder])) or "nothing"))
                # rule 1: contracts
                if inc_folder == folder:
                    continue
                if os.path.basename(inc) in MODULES[inc_folder]:
                    continue
                if is_test and inc in WHITE_BOX:
                    continue
                contract = ", ".join(sorted(MODULES[inc_folder])) or "nothing"
                bad(path, line, '"%s" is internal to %s/ (its contract: %s)'
                    % (inc, inc_folder, contract))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    if not os.path.isdir(os.path.join(root, "grammar")):
        print("check_layout: %s is not a strux tree" % root, file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    n_mod = len(MODULES)
    if problems:
        print("check_layout: %d violation(s) of the layout rules" % len(problems))
        return 1
    print("check_layout: %d modules, every include follows the layout rules" % n_mod)
    return 0


if __name__ == "__main__":
    sys.exit(main())
